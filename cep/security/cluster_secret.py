"""The cluster secret: one random string the manager generates at its first start and every
worker presents to it (plan sync, worker-facing REST calls, registry requests).

The manager keeps it in ``<data-dir>/security/cluster-secret`` (mode 0600); a worker gets it
from ``--cluster-secret-file`` or the ``CEP_CLUSTER_SECRET`` environment variable.

    load_or_create(data_dir) -> str          # manager side, first start creates it
    read(path_or_env=None) -> str | None     # worker side: a file path, else the env variable
    check(given, expected) -> bool           # constant-time comparison
"""

import hmac
import os
import secrets

ENV_VAR = "CEP_CLUSTER_SECRET"
HEADER = "X-CEP-Cluster-Secret"
RELATIVE_PATH = os.path.join("security", "cluster-secret")


def secret_path(data_dir):
    """Where the manager keeps the secret under its data dir."""
    return os.path.join(str(data_dir), RELATIVE_PATH)


def load_or_create(data_dir):
    """The secret under data_dir, created (random, 0600, atomically) if it does not exist yet."""
    path = secret_path(data_dir)
    existing = _read_file(path)
    if existing:
        return existing
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    value = secrets.token_urlsafe(32)
    tmp = "%s.%d.tmp" % (path, os.getpid())
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(value + "\n")
    try:
        os.link(tmp, path)  # fails if another process created it first: keep theirs
    except FileExistsError:
        pass
    finally:
        os.unlink(tmp)
    return _read_file(path)


def read(path_or_env=None):
    """The secret from a file path if given, else from $CEP_CLUSTER_SECRET; None if neither.

    A mapping may be passed instead of a path to read the variable from it (tests)."""
    if isinstance(path_or_env, (str, os.PathLike)) and str(path_or_env):
        value = _read_file(str(path_or_env))
        if value is None:
            raise FileNotFoundError("cluster secret file not found or empty: %s" % path_or_env)
        return value
    env = path_or_env if hasattr(path_or_env, "get") else os.environ
    value = (env.get(ENV_VAR) or "").strip()
    return value or None


def check(given, expected):
    """True if the given secret equals the expected one (constant time; False if either is empty)."""
    if not given or not expected:
        return False
    return hmac.compare_digest(str(given).encode("utf-8"), str(expected).encode("utf-8"))


def _read_file(path):
    try:
        with open(path, "r", encoding="utf-8") as handle:
            value = handle.read().strip()
    except (FileNotFoundError, NotADirectoryError):
        return None
    return value or None
