"""Small helpers of the manager tests."""

import socket
import time

import pytest


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def poll(fn, timeout=60.0, interval=0.25, what="condition"):
    """Call fn until it returns a truthy value; fail with the last value otherwise."""
    deadline, value = time.monotonic() + timeout, None
    while time.monotonic() < deadline:
        value = fn()
        if value:
            return value
        time.sleep(interval)
    pytest.fail(f"{what} not met within {timeout} s (last value {value!r})")
