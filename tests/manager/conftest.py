"""Fixtures of the manager tests: a real redis-server on a free port (started here)."""
import subprocess
import time

import pytest
import redis

from tests.manager.manager_helpers import free_port


@pytest.fixture(scope="session")
def redis_url(redis_server_binary, tmp_path_factory):
    """A redis-server of our own, on a free port, with no persistence; stopped after the session."""
    port = free_port()
    workdir = tmp_path_factory.mktemp("redis")
    proc = subprocess.Popen([redis_server_binary, "--port", str(port), "--bind", "127.0.0.1",
                             "--save", "", "--appendonly", "no", "--dir", str(workdir)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"redis://127.0.0.1:{port}/0"
    client = redis.Redis.from_url(url)
    deadline = time.time() + 10
    while True:
        try:
            client.ping()
            break
        except redis.ConnectionError:
            if time.time() > deadline or proc.poll() is not None:
                proc.kill()
                pytest.fail(f"redis-server did not start on port {port}")
            time.sleep(0.05)
    yield url
    proc.terminate()
    proc.wait(timeout=10)


@pytest.fixture
def redis_db(redis_url):
    """The session redis, flushed before each test."""
    client = redis.Redis.from_url(redis_url)
    client.flushdb()
    return redis_url
