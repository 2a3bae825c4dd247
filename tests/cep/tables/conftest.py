"""Datasources for the database-table tests: an SQLite file per test, and a real PostgreSQL
server per session (initdb + pg_ctl of Debian's postgresql package, on a free port, in a temp
folder; as the postgres user when the tests run as root, since initdb refuses root)."""

import glob
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from tests.conftest import IN_CI, free_port


def _pg_bin():
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if found:
        return os.path.dirname(found[-1])
    initdb = shutil.which("initdb")
    return os.path.dirname(initdb) if initdb else None


def _missing(message):
    if IN_CI:
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="session")
def postgres_url():
    """postgresql+psycopg://... of a server of our own, stopped after the session."""
    bindir = _pg_bin()
    if bindir is None:
        _missing("PostgreSQL's initdb not found (bin/test.sh installs Debian's postgresql)")
    try:
        import psycopg  # noqa: F401
    except ImportError:
        _missing("psycopg is not installed (pip install -e .[test])")
    # its own folder under the system temp dir: pytest's temp root is private to root, and
    # the server runs as the postgres user when the tests run as root
    root = Path(tempfile.mkdtemp(prefix="cep-pg-"))
    data, sock = root / "data", root / "sock"
    sock.mkdir()
    prefix = []
    if os.geteuid() == 0:
        shutil.chown(root, "postgres")
        shutil.chown(sock, "postgres")
        prefix = ["runuser", "-u", "postgres", "--"]
    port = free_port()
    _run(
        prefix
        + [
            f"{bindir}/initdb",
            "-D",
            str(data),
            "-U",
            "cep",
            "-A",
            "trust",
            "--no-sync",
            "-E",
            "UTF8",
            "--locale",
            "C",
        ]
    )
    log = root / "server.log"
    _run(
        prefix
        + [
            f"{bindir}/pg_ctl",
            "-D",
            str(data),
            "-l",
            str(log),
            "-w",
            "-o",
            f"-p {port} -k {sock} -c listen_addresses=127.0.0.1 -c fsync=off",
            "start",
        ]
    )
    url = f"postgresql+psycopg://cep@127.0.0.1:{port}/postgres"
    try:
        _wait_ready(url)
        yield url
    finally:
        subprocess.run(
            prefix + [f"{bindir}/pg_ctl", "-D", str(data), "-m", "fast", "-w", "stop"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        shutil.rmtree(root, ignore_errors=True)


def _run(cmd):
    done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if done.returncode != 0:
        pytest.fail(f"{' '.join(cmd)} failed: {done.stdout[-800:]}")


def _wait_ready(url):
    import sqlalchemy

    engine = sqlalchemy.create_engine(url)
    deadline = time.monotonic() + 30
    while True:
        try:
            with engine.connect():
                break
        except sqlalchemy.exc.OperationalError:
            if time.monotonic() > deadline:
                pytest.fail("PostgreSQL did not accept connections within 30 s")
            time.sleep(0.1)
    engine.dispose()


def write_datasources(path, entries):
    import yaml

    path.write_text(yaml.safe_dump({"datasources": entries}))
    return path


@pytest.fixture
def datasources(tmp_path, monkeypatch):
    """`configure(entries)`: point CEP_DATASOURCES at a file with these datasources (the
    default one an SQLite file in the test's temp folder)."""
    from cep.policy.datasources import forget_loaded

    def configure(entries=None):
        entries = {"default": {"url": f"sqlite:///{tmp_path}/default.sqlite"}, **(entries or {})}
        path = write_datasources(tmp_path / "datasources.yaml", entries)
        monkeypatch.setenv("CEP_DATASOURCES", str(path))
        forget_loaded()
        return path

    yield configure
    forget_loaded()


@pytest.fixture
def pg_database(postgres_url):
    """A fresh database on the session's server: its URL."""
    import sqlalchemy

    name = f"t{time.monotonic_ns()}"
    admin = sqlalchemy.create_engine(postgres_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.execute(sqlalchemy.text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    yield postgres_url.rsplit("/", 1)[0] + "/" + name
    from cep.engine.table import rdbms

    for key, engine in list(rdbms._engines.items()):
        if name in key:
            engine.dispose()
            del rdbms._engines[key]
