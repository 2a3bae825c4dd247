"""Code shipping: the project's packages as a zip and its Python dependencies as a packed
environment, each built once per content hash, cached, and sent with every Spark application.

    code = code_archive(cache_dir)     # <cache>/code/sparkcep-<hash>.zip   (spark.submit.pyFiles)
    env = env_archive(cache_dir)       # <cache>/env/sparkcep-env-<hash>.tar.gz  (spark.archives)

The zip holds the packages executors import (``PACKAGES``) with their data files (the
SiddhiQL grammar) and unchecked hash-based ``.pyc`` files next to the sources, so a Python
worker imports the zip without compiling it. Its hash is the hash of those sources: any
edit builds a new zip under a new name.

The environment holds the distributions executors import (``EXECUTOR_DISTRIBUTIONS``) and
everything they require, copied file by file from this interpreter's site-packages (their
RECORD), laid out as a virtual environment whose ``bin/python`` is a small launcher script:
on the executor it finds a CPython of the manager's version (``CEP_ENV_PYTHON``, the
manager's base interpreter path, then ``python3.X`` on PATH), links it into the environment
and runs it, so the environment works wherever Spark unpacks it. pyspark itself is not
packed: every Spark worker has its own, of the cluster's version (``$SPARK_HOME/python``).
"""

import hashlib
import importlib.metadata as metadata
import io
import os
import py_compile
import re
import sys
import tarfile
import tempfile
import time
import zipfile
from pathlib import Path

from topology.cluster import _locked
from topology.exceptions import PackagingError

PROJECT_ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("cep", "receivers", "publishers", "connectors", "topology", "manager")
DATA_SUFFIXES = (".py", ".lark", ".xsd", ".yaml", ".json")
# import name -> distribution of everything topology executors import: setup.cfg's
# install_requires without pyspark (each Spark worker has its own) and pyarrow (the
# backtest's; the engine's columnar checks use it only when present); numpy and pandas
# are the engine's columnar paths (cep/engine/columnar). The preflight check imports these.
EXECUTOR_MODULES = {
    "msgpack": "msgpack",
    "zmq": "pyzmq",
    "lark": "lark",
    "msgspec": "msgspec",
    "yaml": "pyyaml",
    "psutil": "psutil",
    "redis": "redis",
    "lxml": "lxml",
    "flask": "flask",
    "prometheus_client": "prometheus_client",
    "numpy": "numpy",
    "pandas": "pandas",
    "py_mini_racer": "mini-racer",
}
EXECUTOR_DISTRIBUTIONS = tuple(sorted(set(EXECUTOR_MODULES.values())))
NOT_PACKED = {"pyspark", "py4j", "sparkcep", "pip", "setuptools", "wheel"}
ENV_LAUNCHER_VERSION = "2"
FIXED_TIME = (2020, 1, 1, 0, 0, 0)  # zip entry times: the same sources give the same bytes


def source_files(root=PROJECT_ROOT, packages=PACKAGES):
    """(relative path, absolute path) of every shipped file of the packages, sorted."""
    out = []
    for package in packages:
        for path in (Path(root) / package).rglob("*"):
            if (
                path.is_file()
                and path.suffix in DATA_SUFFIXES
                and "__pycache__" not in path.parts
                and not path.name.startswith(".")
            ):
                out.append((path.relative_to(root).as_posix(), path))
    return sorted(out)


def content_hash(files):
    """sha256 over the relative names and bytes of (relative, absolute) files."""
    digest = hashlib.sha256()
    for rel, path in files:
        digest.update(rel.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def code_archive(cache_dir, root=PROJECT_ROOT, packages=PACKAGES):
    """The zip of the project's packages for this content (built now if not cached)."""
    files = source_files(root, packages)
    if not files:
        raise PackagingError(f"no project sources under {root} for {', '.join(packages)}")
    key = content_hash(files)[:20]
    target = Path(cache_dir) / "code" / f"sparkcep-{key}.zip"
    return _cached(target, lambda tmp: _write_code_zip(tmp, files), keep=20)


def _write_code_zip(path, files):
    """Sources, their .pyc, and an entry per directory (zipimport finds namespace packages,
    such as cep/engine without an __init__.py, by their directory entries)."""
    dirs = sorted(
        {
            parent.as_posix() + "/"
            for rel, _ in files
            for parent in Path(rel).parents
            if parent.parts
        }
    )
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=6) as zf:
        for name in dirs:
            zf.writestr(zipfile.ZipInfo(name, FIXED_TIME), b"")
        for rel, src in files:
            zf.writestr(zipfile.ZipInfo(rel, FIXED_TIME), src.read_bytes(), zipfile.ZIP_DEFLATED)
            if rel.endswith(".py"):
                zf.writestr(
                    zipfile.ZipInfo(rel + "c", FIXED_TIME),
                    _pyc_bytes(src, rel),
                    zipfile.ZIP_DEFLATED,
                )


def _pyc_bytes(src, rel):
    """An unchecked hash-based .pyc of src (zipimport reads `module.pyc` next to module.py);
    tracebacks name the file by its path inside the zip."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "m.pyc"
        py_compile.compile(
            str(src),
            cfile=str(out),
            dfile=rel,
            doraise=True,
            invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH,
        )
        return out.read_bytes()


def dependency_closure(roots=EXECUTOR_DISTRIBUTIONS, exclude=NOT_PACKED):
    """The installed distributions `roots` need (themselves included), sorted by name.
    Raises PackagingError naming a root that is not installed here."""
    seen, todo = {}, list(roots)
    while todo:
        name = _canonical(todo.pop())
        if name in seen or name in exclude:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            if name in map(_canonical, roots):
                raise PackagingError(
                    f"{name} is not installed in {sys.prefix}: cannot pack "
                    f"the executors' environment"
                ) from None
            continue  # an optional dependency of some marker we do not meet
        seen[name] = dist
        for req in dist.requires or ():
            parsed = _requirement(req)
            if parsed:
                todo.append(parsed)
    return [seen[k] for k in sorted(seen)]


def _canonical(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement(text):
    """The distribution name of a requirement line whose marker holds here (no extras);
    without the `packaging` library, every requirement but an extra's is kept."""
    name, _, marker = text.partition(";")
    if "extra" in marker:
        return None
    try:
        from packaging.markers import Marker

        if marker.strip() and not Marker(marker.strip()).evaluate():
            return None
    except ImportError:
        pass
    return re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", name).group(1)


def env_key(dists):
    """The environment's cache key: Python version, platform, launcher and distributions."""
    parts = [
        sys.implementation.cache_tag,
        sys.platform,
        os.uname().machine,
        ENV_LAUNCHER_VERSION,
    ] + [f"{d.metadata['Name']}=={d.version}" for d in dists]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:20]


def plugin_distributions():
    """The distributions of the installed SiddhiQL plug-ins (entry-point group
    sparkcep.extensions) that loaded: executors need them to run a plan that uses them."""
    from cep.catalog import plugins

    return plugins.distributions()


def env_archive(cache_dir, roots=None):
    """The packed environment (tar.gz) of the executors' dependencies and the installed
    plug-ins (built if not cached)."""
    if roots is None:
        roots = EXECUTOR_DISTRIBUTIONS + tuple(plugin_distributions())
    dists = dependency_closure(roots)
    target = Path(cache_dir) / "env" / f"sparkcep-env-{env_key(dists)}.tar.gz"
    return _cached(target, lambda tmp: _write_env_tar(tmp, dists), keep=3)


def _write_env_tar(path, dists):
    lib = f"lib/python{sys.version_info[0]}.{sys.version_info[1]}/site-packages"
    with tarfile.open(path, "w:gz", compresslevel=1) as tar:
        _add_text(tar, "bin/python", launcher_script(), 0o755)
        _add_text(tar, "bin/python3", launcher_script(), 0o755)
        _add_text(
            tar,
            "sparkcep-env.txt",
            "".join(f"{d.metadata['Name']}=={d.version}\n" for d in dists),
            0o644,
        )
        for dist in dists:
            for rel in dist.files or ():
                src = Path(dist.locate_file(rel))
                if "__pycache__" in rel.parts or not src.is_file() or rel.parts[0] == "..":
                    continue
                tar.add(src, f"{lib}/{rel.as_posix()}", recursive=False)


def _add_text(tar, name, text, mode):
    data = text.encode()
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = len(data), mode, int(time.time())
    tar.addfile(info, io.BytesIO(data))


def launcher_script():
    """env/bin/python: find a CPython of this version, make the environment a venv of it, run it."""
    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    base = getattr(sys, "_base_executable", sys.executable)
    return f"""#!/bin/sh
# sparkcep packed environment (topology/packaging.py): runs CPython {version} with this
# environment's packages. Set CEP_ENV_PYTHON to the interpreter to use on this machine.
env=$(cd "$(dirname "$0")/.." && pwd)
if [ ! -x "$env/bin/python{version}" ]; then
  for py in "$CEP_ENV_PYTHON" "{base}" python{version} /usr/bin/python{version} /usr/local/bin/python{version}; do
    [ -n "$py" ] || continue
    real=$("$py" -I -c 'import sys; assert sys.version_info[:2] == ({version.replace(".", ", ")}); print(sys.executable)' 2>/dev/null) || continue
    [ -n "$real" ] || continue
    # pyvenv.cfg first: a concurrent start that sees the link must see the venv too
    printf 'home = %s\\ninclude-system-site-packages = false\\nversion = {version}\\n' "$(dirname "$real")" > "$env/pyvenv.cfg.$$" && mv -f "$env/pyvenv.cfg.$$" "$env/pyvenv.cfg"
    tmp="$env/bin/.python{version}.$$"
    ln -sf "$real" "$tmp" && mv -f "$tmp" "$env/bin/python{version}"
    break
  done
fi
if [ ! -x "$env/bin/python{version}" ]; then
  echo "sparkcep env: no CPython {version} on this machine (tried CEP_ENV_PYTHON, {base}, python{version} on PATH); install it or set topology.env_python" >&2
  exit 127
fi
exec "$env/bin/python{version}" "$@"
"""


def _cached(target, build, keep):
    """target if it exists, else build(tmp) under a lock and rename it into place; keeps the
    `keep` newest archives of the folder (older versions go)."""
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with _locked(target.parent / ".lock"):
        if target.exists():
            return target
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        try:
            build(tmp)
            tmp.replace(target)
        except OSError as exc:
            raise PackagingError(f"cannot build {target.name}: {exc}") from None
        finally:
            tmp.unlink(missing_ok=True)
        _prune(target.parent, keep)
    return target


def _prune(folder, keep):
    """Remove all but the `keep` newest archives of a folder (old versions)."""
    old = sorted(folder.glob("sparkcep-*"), key=lambda p: p.stat().st_mtime, reverse=True)[keep:]
    for path in old:
        path.unlink(missing_ok=True)
