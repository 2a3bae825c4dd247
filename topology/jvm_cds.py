"""Class-data sharing (AppCDS) for the Spark JVMs this machine starts.

A Spark JVM spends most of its start loading and verifying the same few thousand classes:
on the 2-core project machine under load, the embedded master answered its web UI after
17-29 s without an archive and 10-15 s with one. Every recovery path starts JVMs (a killed
executor, a restarted embedded cluster, a resubmitted driver), so each role (`master`,
`worker`, `driver`, `executor`) gets a static CDS archive of its own, made in three steps:

1. The role's first JVM records the classes it loads (``-XX:DumpLoadedClassList``; the
   list is written as classes load, so even a JVM killed with -9 leaves a usable one). A
   claim file keeps the role's other JVMs from recording too, for 10 minutes.
2. Once the list has not grown for 20 s, the next request for the role starts a background
   ``java -Xshare:dump`` that writes the archive beside it (a minute or two; it never
   delays a JVM start).
3. When that process has ended, the archive is checked with ``java -Xshare:on`` (a partial
   archive would crash a JVM that maps it; a checked one cannot) and renamed to
   ``<key>.jsa``; from then on every JVM of the role maps it (``-XX:SharedArchiveFile``).

The key covers the role, the Java binary and the Spark jars, so another Java or pyspark
gets new archives. The archives live in ``spark.cds_dir`` (default: ``~/.cache/sparkcep/cds``,
shared by every state_dir of the machine; 60-70 MB a role); ``off`` turns sharing off.
Executors use it only when they run on this machine (the embedded cluster).
"""

import hashlib
import os
import shutil
import subprocess
import time
import uuid
from pathlib import Path

import pyspark

SPARK_HOME = os.path.dirname(pyspark.__file__)
ROLES = ("master", "worker", "driver", "executor")
SETTLE_S = 20.0  # a class list that has not grown this long is complete enough to dump
STALE_S = 600.0  # a claim older than this: its JVM is gone without a list, claim again


def default_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "sparkcep" / "cds"


def archive_dir(settings) -> "Path | None":
    """The archive folder of these settings, or None when class-data sharing is off."""
    value = settings["spark.cds_dir"]
    if value == "off" or value is None:
        return None
    return Path(value) if value else default_dir()


def java_binary() -> str:
    home = os.environ.get("JAVA_HOME")
    candidate = os.path.join(home, "bin", "java") if home else shutil.which("java")
    return os.path.realpath(candidate) if candidate else "java"


def archive_key(role: str) -> str:
    """Role, Java binary and Spark jars: an archive only serves the JVM it was made by."""
    java = java_binary()
    try:
        java_stamp = f"{java}:{os.stat(java).st_mtime_ns}"
    except OSError:
        java_stamp = java
    jars = os.path.join(SPARK_HOME, "jars")
    digest = hashlib.sha1(f"{java_stamp}|{pyspark.__version__}|{jars}".encode()).hexdigest()
    return f"{role}-{digest[:12]}"


def java_options(settings, role: str) -> list:
    """The JVM options of one `role`'s next JVM: map the archive, or record its classes."""
    if role not in ROLES:
        raise ValueError(f"unknown JVM role {role!r} (known: {', '.join(ROLES)})")
    folder = archive_dir(settings)
    if folder is None:
        return []
    try:
        folder.mkdir(parents=True, exist_ok=True)
        return _options(folder, archive_key(role))
    except OSError:  # a read-only or full cache: start without sharing, as before
        return []


def _options(folder: Path, key: str) -> list:
    final = folder / f"{key}.jsa"
    if not final.exists():
        _advance(folder, key, final)
    if final.exists():
        return [f"-XX:SharedArchiveFile={final}", "-Xshare:auto"]
    claim = folder / f"{key}.claim"
    if _age(claim) < STALE_S or list(folder.glob(f"{key}.*.classlist")):
        return []  # a JVM is recording the class list, or the archive is on its way
    claim.touch()
    return [f"-XX:DumpLoadedClassList={folder / f'{key}.{uuid.uuid4().hex[:8]}.classlist'}"]


_DUMPS = {}  # <key>.dumping path -> Popen of the dumps this process started (polled, so never a zombie)


def _advance(folder: Path, key: str, final: Path) -> None:
    """Take the role's archive one step further: check and rename a finished dump, or start
    a dump from a settled class list; drop what failed."""
    dumping = folder / f"{key}.dumping"
    if _dump_running(key, dumping):
        return
    dumping.unlink(missing_ok=True)
    for part in folder.glob(f"{key}.*.part"):
        if usable(part):
            os.replace(part, final)
            _remove(folder, key, ("classlist", "list"), folder / f"{key}.claim")
            return
        part.unlink(missing_ok=True)  # its dump failed or was killed: record again later
        _remove(folder, key, ("classlist", "list"))
        return
    for listing in folder.glob(f"{key}.*.classlist"):
        if _age(listing) >= SETTLE_S:
            _start_dump(key, listing, dumping)
            return


def _remove(folder: Path, key: str, suffixes, *more: Path) -> None:
    for path in (*(p for s in suffixes for p in folder.glob(f"{key}.*.{s}")), *more):
        path.unlink(missing_ok=True)


def _dump_running(key: str, dumping: Path) -> bool:
    proc = _DUMPS.get(dumping)
    if proc is not None:
        if proc.poll() is None:
            return True
        del _DUMPS[dumping]
        return False
    try:
        pid = int(dumping.read_text())
    except (OSError, ValueError):
        return False
    return _alive(pid)


def _start_dump(key: str, listing: Path, dumping: Path) -> None:
    clean = listing.with_suffix(".list")
    text = listing.read_text(errors="replace")
    clean.write_text(text[: text.rfind("\n") + 1])  # a killed JVM may leave half a line
    part = listing.with_suffix(".part")
    proc = subprocess.Popen(
        [
            java_binary(),
            "-Xshare:dump",
            f"-XX:SharedClassListFile={clean}",
            f"-XX:SharedArchiveFile={part}",
            "-cp",
            spark_classpath(),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    _DUMPS[dumping] = proc
    dumping.write_text(str(proc.pid))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _age(path: Path) -> float:
    try:
        return time.time() - path.stat().st_mtime
    except OSError:
        return float("inf")


def spark_classpath() -> str:
    """The class path Spark's launcher gives every JVM it starts (an archive records it)."""
    jars = os.path.join(SPARK_HOME, "jars")
    first = sorted(str(p) for p in Path(jars).glob("slf4j-api-*.jar"))
    return ":".join([os.path.join(SPARK_HOME, "conf"), *first, os.path.join(jars, "*")])


def usable(archive: Path) -> bool:
    """True when a JVM maps the archive with sharing required (-Xshare:on): a partial
    archive would crash a JVM that maps it, a mismatched one only goes unused."""
    crash = archive.parent / f"{archive.name}.check-crash.log"  # the JVM's hs_err report
    try:
        done = subprocess.run(
            [
                java_binary(),
                "-Xshare:on",
                f"-XX:SharedArchiveFile={archive}",
                f"-XX:ErrorFile={crash}",
                "-cp",
                spark_classpath(),
                "-version",
            ],
            capture_output=True,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    finally:
        crash.unlink(missing_ok=True)
    return done.returncode == 0
