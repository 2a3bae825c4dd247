"""Issue 11: a plan the worker cannot start, or a tenant id it must refuse, never loops the sync
and never leaks a listening socket; a removed plan closes every port it opened.

Real worker in distributed mode, real registry service, stand-in manager REST endpoint; the
listening sockets are counted from the operating system (psutil)."""
import socket

import psutil

from tests.worker.test_worker_distributed import make_worker


def listening():
    """This process's listening TCP ports (the worker runs in this process)."""
    proc = psutil.Process()
    conns = proc.net_connections("tcp") if hasattr(proc, "net_connections") \
        else proc.connections("tcp")
    return sorted(c.laddr.port for c in conns if c.status == psutil.CONN_LISTEN)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def with_sources(entry, *sources):
    entry["imported"][0]["sources"] = list(sources)
    return entry


def test_a_plan_failing_half_way_closes_what_it_opened_and_is_not_retried(
        fake_manager, registry_service, tmp_path, helpers):
    wait_for = helpers["wait_for"]
    blocker = socket.socket()
    blocker.bind(("127.0.0.1", 0))
    blocker.listen()
    taken = blocker.getsockname()[1]
    w = make_worker(fake_manager, registry_service, tmp_path).start()
    try:
        assert wait_for(lambda: w.sync.polls >= 2)
        before = listening()
        http_port = free_port()
        bad = [{"type": "http", "options": {"port": str(http_port)}},  # opens a listener ...
               {"type": "zmq", "options": {"url": f"tcp://127.0.0.1:{taken}"}}]  # ... then fails
        for version in (1, 2, 3):  # each new version is tried once and fails the same way
            fake_manager.set_plans([with_sources(helpers["stock_entry"](version), *bad)])
            assert wait_for(lambda: w.status()["failed"].get("-1234/StockAnalysis", {})
                            .get("version") == version)
            assert listening() == before
        failed = w.status()["failed"]["-1234/StockAnalysis"]["error"]
        assert "@source failed" in failed and "ZMQError" in failed
        polls = w.sync.polls
        assert wait_for(lambda: w.sync.polls >= polls + 3)
        assert w.sync.last_error is None and listening() == before and not w.plans
        zmq_port = free_port()
        good = [{"type": "http", "options": {"port": str(http_port)}},
                {"type": "zmq", "options": {"url": f"tcp://127.0.0.1:{zmq_port}"}}]
        fake_manager.set_plans([with_sources(helpers["stock_entry"](4), *good)])
        assert wait_for(lambda: "-1234/StockAnalysis" in w.status()["plans"])
        during = listening()
        assert {http_port, zmq_port} <= set(during) and len(during) == len(before) + 3
        fake_manager.set_plans([])  # removed: the sources and the publisher service close
        assert wait_for(lambda: not w.plans and listening() == before)
    finally:
        w.stop()
        blocker.close()


def test_a_30_digit_tenant_is_skipped_with_an_error_and_no_sync_loop(
        fake_manager, registry_service, tmp_path, helpers):
    wait_for = helpers["wait_for"]
    w = make_worker(fake_manager, registry_service, tmp_path).start()
    try:
        assert wait_for(lambda: w.sync.polls >= 1)
        before = listening()
        huge = helpers["stock_entry"](1, name="Huge")
        huge["tenant"] = 10 ** 29
        fake_manager.set_plans([huge, helpers["stock_entry"](1)])
        assert wait_for(lambda: "-1234/StockAnalysis" in w.status()["plans"])
        sync = w.status()["sync"]
        (key, error), = sync["plan_errors"].items()
        assert key == f"{10 ** 29}/Huge" and "32-bit" in error
        requests, polls = fake_manager.requests, w.sync.polls
        assert wait_for(lambda: w.sync.polls >= polls + 3)
        assert w.sync.last_error is None and list(w.plans) == [(-1234, "StockAnalysis")]
        assert fake_manager.requests >= requests + 3  # polled, answered 304: no retry storm
        assert len(listening()) == len(before) + 1  # the good plan's publisher service only
        fake_manager.set_plans([])
        assert wait_for(lambda: not w.plans and listening() == before)
    finally:
        w.stop()
