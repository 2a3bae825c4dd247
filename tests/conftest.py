"""Project-wide test helpers: where a real dependency is missing, skip with the reason, except
in CI (CI=true), where a missing real dependency is a failure."""

import os
import shutil
import socket
import subprocess
import time

import pytest

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


@pytest.fixture(autouse=True, scope="session")
def _auth_environment():
    """Issue 10: managers started by tests (in-process or as processes) create their super
    admin with a known password, and managers and workers share one cluster secret, as an
    operator sets them up (CEP_ADMIN_PASSWORD, CEP_CLUSTER_SECRET). Authentication stays on."""
    import secrets
    from tests.auth_helpers import ADMIN_PASSWORD

    saved = {k: os.environ.get(k) for k in ("CEP_ADMIN_PASSWORD", "CEP_CLUSTER_SECRET")}
    os.environ["CEP_ADMIN_PASSWORD"] = ADMIN_PASSWORD
    os.environ["CEP_CLUSTER_SECRET"] = secrets.token_urlsafe(32)
    yield
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """`--dist loadfile` starts the files that take longest first (tests/schedule.py)."""
    if config.getvalue("dist") == "loadfile":
        from tests.schedule import make_scheduler

        return make_scheduler(config, log)
    return None


def require_binary(name, why):
    """The path of executable `name`; skips (or fails in CI) with `why` when it is missing."""
    path = shutil.which(name)
    if path:
        return path
    message = f"{name} not found on PATH: {why} (bin/test.sh installs it)"
    if IN_CI:
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="session")
def redis_server_binary():
    return require_binary("redis-server", "Redis tests talk to a real redis-server")


def free_port():
    """A TCP port that was free a moment ago on the loopback interface."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def redis_url(redis_server_binary, tmp_path_factory):
    """A redis-server of our own, on a free port, with no persistence; stopped after the session."""
    import redis

    port = free_port()
    workdir = tmp_path_factory.mktemp("redis")
    proc = subprocess.Popen(
        [
            redis_server_binary,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(workdir),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    client = redis.Redis.from_url(url)
    deadline = time.monotonic() + 10
    while True:
        try:
            client.ping()
            break
        except redis.ConnectionError:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                pytest.fail(f"redis-server did not start on port {port}")
            time.sleep(0.05)
    client.close()
    yield url
    proc.terminate()
    proc.wait(timeout=10)


@pytest.fixture
def redis_db(redis_url):
    """The session's redis-server, flushed before the test."""
    import redis

    client = redis.Redis.from_url(redis_url)
    client.flushdb()
    client.close()
    return redis_url


# -- hygiene: a test module leaves no listening socket and no non-daemon thread behind --------
# Under pytest-xdist one process runs many test files: a server or thread an earlier file left
# running shows up in a later file's port counts (tests/worker/listeners.py). After the last
# test of each module (its module fixtures torn down), listeners and non-daemon threads that were
# not there when the module began, and that no session fixture started, get a warning naming
# the module; CEP_TEST_LEAKS=error turns it into an error of that test.
LEAK_GRACE_S = 2.0  # ZeroMQ sockets closed without waiting keep listening a few milliseconds
_leaks = {"module": None, "before": (frozenset(), frozenset()), "session": set()}


def _resources():
    """(listening TCP ports of this process, live non-daemon threads but the main one)."""
    import threading
    import psutil

    proc = psutil.Process()
    ports = frozenset(
        c.laddr.port for c in proc.net_connections("tcp") if c.status == psutil.CONN_LISTEN
    )
    threads = frozenset(
        t for t in threading.enumerate() if not t.daemon and t is not threading.main_thread()
    )
    return ports, threads


@pytest.hookimpl(hookwrapper=True)
def pytest_fixture_setup(fixturedef, request):
    """What a session fixture starts (a Spark cluster, a server) is meant to outlive modules."""
    before = _resources() if fixturedef.scope == "session" else None
    yield
    if before is not None:
        ports, threads = _resources()
        _leaks["session"] |= (ports - before[0]) | (threads - before[1])


def _left_behind():
    ports, threads = _resources()
    before, session = _leaks["before"], _leaks["session"]
    return sorted(ports - before[0] - session), [t for t in threads - before[1] - session]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):
    module = getattr(item, "module", None)
    if module is not _leaks["module"]:  # before the module's own fixtures start
        _leaks["module"], _leaks["before"] = module, _resources()
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    result = yield
    module = getattr(item, "module", None)
    if module is None or nextitem is not None and getattr(nextitem, "module", None) is module:
        return result
    deadline = time.monotonic() + LEAK_GRACE_S
    ports, threads = _left_behind()
    while (ports or threads) and time.monotonic() < deadline:
        time.sleep(0.05)
        ports, threads = _left_behind()
    if ports or threads:
        message = (
            f"{module.__name__} left behind listening ports {ports} and non-daemon "
            f"threads {[t.name for t in threads]} (stop what the tests start)"
        )
        if os.environ.get("CEP_TEST_LEAKS", "").lower() == "error":
            pytest.fail(message, pytrace=False)
        import warnings

        warnings.warn(pytest.PytestWarning(message))
    return result
