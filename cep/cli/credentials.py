"""Where `cep login` keeps API tokens: `$XDG_CONFIG_HOME/sparkcep/credentials.json` (else
~/.config/sparkcep/credentials.json), mode 0600, one token per manager URL. `CEP_TOKEN`
overrides the file."""

import json
import os
import tempfile
from pathlib import Path


def path():
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(Path.home(), ".config")
    return Path(base) / "sparkcep" / "credentials.json"


def _key(manager):
    return manager.rstrip("/")


def load():
    try:
        with open(path(), encoding="utf-8") as fh:
            data = json.load(fh)
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def token_for(manager):
    """$CEP_TOKEN, else the token `cep login` stored for this manager, else None."""
    if os.environ.get("CEP_TOKEN"):
        return os.environ["CEP_TOKEN"].strip()
    entry = load().get("managers", {}).get(_key(manager))
    return entry.get("token") if isinstance(entry, dict) else None


def save(manager, user, token):
    """Store the token of `manager` (0600 file in a 0700 folder, written atomically)."""
    target = path()
    target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    data = load()
    data.setdefault("managers", {})[_key(manager)] = {"user": user, "token": token}
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".", suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=1)
    os.replace(tmp, target)
    return target


def forget(manager):
    data = load()
    if data.get("managers", {}).pop(_key(manager), None) is not None:
        save_all(data)


def save_all(data):
    target = path()
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".", suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=1)
    os.replace(tmp, target)
