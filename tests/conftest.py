"""Project-wide test helpers: where a real dependency is missing, skip with the reason, except
in CI (CI=true), where a missing real dependency is a failure."""
import os
import shutil

import pytest

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


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
