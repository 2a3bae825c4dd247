"""Issue 11: a plan the worker cannot start, or a tenant id it must refuse, never loops the sync
and never leaks a listening socket; a removed plan closes every port it opened.

Real worker in distributed mode, real registry service, stand-in manager REST endpoint; the
listening sockets are counted from the operating system (psutil). Under pytest-xdist this
process ran other test files before: a new listener counts against the worker unless a thread
that ran before the worker holds it (tests/worker/listeners.py)."""

import socket

from tests.worker.listeners import Listeners
from tests.worker.test_worker_distributed import make_worker

KEY = "-1234/StockAnalysis"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def with_sources(entry, *sources):
    entry["imported"][0]["sources"] = list(sources)
    return entry


def test_a_plan_failing_half_way_closes_what_it_opened_and_is_not_retried(
    fake_manager, registry_service, tmp_path, helpers
):
    wait_for = helpers["wait_for"]
    blocker = socket.socket()
    blocker.bind(("127.0.0.1", 0))
    blocker.listen()
    taken = blocker.getsockname()[1]
    ports = Listeners()
    w = make_worker(fake_manager, registry_service, tmp_path).start()
    try:
        assert wait_for(lambda: w.sync.polls >= 2)
        ports.mark()  # the worker's own HTTP and ZeroMQ receivers are up
        http_port = free_port()
        bad = [
            {"type": "http", "options": {"port": str(http_port)}},  # opens a listener ...
            {"type": "zmq", "options": {"url": f"tcp://127.0.0.1:{taken}"}},
        ]  # ... then fails
        for version in (1, 2, 3):  # each new version is tried once and fails the same way
            fake_manager.set_plans([with_sources(helpers["stock_entry"](version), *bad)])
            assert wait_for(lambda: w.status()["failed"].get(KEY, {}).get("version") == version)
            assert w.ports.get(KEY) > 0  # its publisher service was bound before the failure
            assert ports.new(w) == set()  # at once: failed means its ports are closed
        failed = w.status()["failed"][KEY]["error"]
        assert "@source failed" in failed and "ZMQError" in failed
        polls = w.sync.polls
        assert wait_for(lambda: w.sync.polls >= polls + 3)
        assert w.sync.last_error is None and ports.new(w) == set() and not w.plans
        remembered = w.ports.get(KEY)
        zmq_port = free_port()
        good = [
            {"type": "http", "options": {"port": str(http_port)}},
            {"type": "zmq", "options": {"url": f"tcp://127.0.0.1:{zmq_port}"}},
        ]
        fake_manager.set_plans([with_sources(helpers["stock_entry"](4), *good)])
        assert wait_for(lambda: KEY in w.status()["plans"])
        publisher = w.status()["plans"][KEY]["outflow"]["port"]
        assert publisher == remembered  # the port the failed versions bound, free again
        assert ports.new(w) == {http_port, zmq_port, publisher}
        fake_manager.set_plans([])  # removed: the sources and the publisher service close
        assert wait_for(lambda: not w.status()["plans"])  # (the status waits for the teardown)
        assert ports.new(w) == set()  # at once: removed means its ports are closed
    finally:
        w.stop()
        blocker.close()


def test_a_30_digit_tenant_is_skipped_with_an_error_and_no_sync_loop(
    fake_manager, registry_service, tmp_path, helpers
):
    wait_for = helpers["wait_for"]
    ports = Listeners()
    w = make_worker(fake_manager, registry_service, tmp_path).start()
    try:
        assert wait_for(lambda: w.sync.polls >= 1)
        ports.mark()
        huge = helpers["stock_entry"](1, name="Huge")
        huge["tenant"] = 10**29
        fake_manager.set_plans([huge, helpers["stock_entry"](1)])
        assert wait_for(lambda: KEY in w.status()["plans"])
        sync = w.status()["sync"]
        ((key, error),) = sync["plan_errors"].items()
        assert key == f"{10**29}/Huge" and "32-bit" in error
        requests, polls = fake_manager.requests, w.sync.polls
        assert wait_for(lambda: w.sync.polls >= polls + 3)
        assert w.sync.last_error is None and list(w.plans) == [(-1234, "StockAnalysis")]
        assert fake_manager.requests >= requests + 3  # polled, answered 304: no retry storm
        # the good plan's publisher service only
        assert ports.new(w) == {w.status()["plans"][KEY]["outflow"]["port"]}
        fake_manager.set_plans([])
        assert wait_for(lambda: not w.status()["plans"])
        assert ports.new(w) == set()
    finally:
        w.stop()
