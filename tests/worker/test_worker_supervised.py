"""Issue 11: one bad accepted event must not stop a stream, and no worker thread dies silently.

A worker in distributed mode with a real registry service, a stand-in manager and a stand-in
spout and publisher bolt on real ZeroMQ sockets (as test_worker_distributed.py)."""

import threading
import time

import msgpack
import pytest

from cep.worker.inflow import SpoutConnection
from cep.worker.supervisor import SupervisedThread, ThreadBook
from publishers.service import PublisherService
from receivers.zmq_receiver import ZmqEventClient
from tests.worker.test_worker_distributed import get, make_worker, plan_url, post

KEY = ("-1234", "StockAnalysis", "StockStream")


def _thread(w, prefix):
    return next(t for t in w.status()["threads"] if t["name"].startswith(prefix))


@pytest.fixture
def running(fake_manager, registry_service, registry_client, tmp_path, helpers):
    fake_manager.set_plans([helpers["stock_entry"]()])
    spout = helpers["FakeSpout"](registry_client)
    w = make_worker(fake_manager, registry_service, tmp_path).start()
    assert helpers["wait_for"](lambda: "-1234/StockAnalysis" in w.status()["plans"])
    yield w, spout
    w.stop()
    spout.close()


def test_bad_events_over_http_are_rejected_and_later_events_flow(running, helpers):
    w, spout = running
    status, body = post(
        plan_url(w),
        [
            {"timestamp": 10**30, "data": ["IBM", 1.0, 1]},
            {"timestamp": 5, "data": ["\ud800", 1.0, 1]},
            {"timestamp": 6, "data": ["OK", 1.0, 1]},
        ],
    )
    assert status == 207 and (body["accepted"], body["rejected"]) == (1, 2)
    assert "outside" in body["errors"][0]["reason"]
    assert "UTF-8" in body["errors"][1]["reason"]
    status, body = post(plan_url(w), [{"timestamp": 10**30, "data": ["IBM", 1.0, 1]}])
    assert status == 400 and body["rejected"] == 1
    for i in range(3):
        assert post(plan_url(w), [{"timestamp": 10 + i, "data": ["LATER", 1.0, i]}])[0] == 200
    assert helpers["wait_for"](lambda: spout.drain() == 4)
    assert [e[1][0] for e in spout.events] == ["OK", "LATER", "LATER", "LATER"]
    assert _thread(w, "inflow")["restarts"] == 0


def test_bad_events_over_zmq_are_counted_and_later_events_flow(running, helpers):
    w, spout = running
    client = ZmqEventClient(w.zmq_url)
    try:
        client.send(KEY, [[2**64 - 1, ["IBM", 1.0, 1]], [7, ["OK", 1.0, 1]]])
        surrogate = msgpack.packb([[8, ["\ud800", 1.0, 1]]], unicode_errors="surrogatepass")
        client.send_raw([b"-1234/StockAnalysis/StockStream", surrogate])
        client.send(KEY, [[9, ["LATER", 1.0, 2]]])
        assert helpers["wait_for"](lambda: spout.drain() == 2)
    finally:
        client.close()
    assert [e[1][0] for e in spout.events] == ["OK", "LATER"]
    counters = w.status()["receivers"]
    assert counters["streams"]["-1234/StockAnalysis/StockStream"]["rejected"] == 1
    assert counters["zmq_bad_messages"] == 1


def test_a_failing_inflow_thread_restarts_and_shows_in_status(running, helpers, monkeypatch):
    w, spout = running
    cls = type(w.plans[(-1234, "StockAnalysis")].inflows["StockStream"])
    assert issubclass(cls, SpoutConnection)
    real, calls = cls._send_some, []

    def poisoned(self):  # the first send after the patch raises, as a poison item did
        if not calls:
            calls.append(1)
            raise RuntimeError("poison item")
        return real(self)

    monkeypatch.setattr(cls, "_send_some", poisoned)
    assert post(plan_url(w), [{"timestamp": 1, "data": ["AFTER", 1.0, 1]}])[0] == 200
    assert helpers["wait_for"](lambda: spout.drain() == 1)
    name = "inflow -1234/StockAnalysis/StockStream"  # the restart comes after its backoff
    assert helpers["wait_for"](
        lambda: _thread(w, name)["state"] == "running" and _thread(w, name)["restarts"] == 1
    )
    t = _thread(w, name)
    assert (t["state"], t["restarts"], t["failures"]) == ("running", 1, 1)
    assert t["last_error"] == "RuntimeError: poison item"
    served = get(f"{w.http_url}/status")["threads"]
    assert {x["name"].split(" ")[0] for x in served} >= {
        "inflow",
        "publisher",
        "heartbeat",
        "deployment-sync",
        "worker-info",
        "zmq-receiver",
    }


def test_a_failing_publisher_service_restarts_and_later_frames_reach_the_sink(
    running, registry_client, helpers, tmp_path, monkeypatch
):
    w, _ = running
    handle, calls = PublisherService._handle, []

    def poisoned(self, frame):  # a sink failing with an unexpected error type
        if not calls:
            calls.append(1)
            raise KeyError("sink exploded")
        return handle(self, frame)

    monkeypatch.setattr(PublisherService, "_handle", poisoned)
    bolt = helpers["FakePublisherBolt"](registry_client)
    try:
        bolt.send("HighPriceStream", [[1, ["LOST", 1.0, 1]]])
        assert helpers["wait_for"](lambda: _thread(w, "publisher")["restarts"] == 1)
        bolt.send("HighPriceStream", [[2, ["IBM", 510.0, 10]]])
        out = tmp_path / "out" / "-1234" / "StockAnalysis" / "HighPriceStream.jsonl"
        assert helpers["wait_for"](lambda: out.exists() and "IBM" in out.read_text())
    finally:
        bolt.close()
    assert "sink exploded" in _thread(w, "publisher")["last_error"]


def test_worker_info_carries_the_threads_to_the_manager(running, registry_service):
    w, _ = running
    w.reporter.report()
    info = next(i for _, i in registry_service.table.worker_infos() if i["worker"] == "w1")
    names = {t["name"] for t in info["threads"]}
    assert "deployment-sync" in names and "inflow -1234/StockAnalysis/StockStream" in names
    assert {t["state"] for t in info["threads"]} == {"running"}


def test_a_thread_that_keeps_failing_is_given_up_as_failed():
    stop, book = threading.Event(), ThreadBook(backoff=0.01, max_failures=3, window_s=60)

    def always():
        raise ValueError("broken")

    t = book.thread("always", always, stop).start()
    t.join(5)
    assert not t.is_alive()
    assert book.describe() == [
        {
            "name": "always",
            "state": "failed",
            "restarts": 3,
            "failures": 4,
            "last_error": "ValueError: broken",
            "last_error_at": t.last_error_at,
        }
    ]


def test_a_stopped_thread_leaves_the_book_and_a_clean_return_is_not_a_failure():
    stop, book = threading.Event(), ThreadBook()
    t = book.thread("quiet", lambda: stop.wait(5), stop).start()
    assert book.summary()["running"] == 1
    stop.set()
    t.join(5)
    time.sleep(0.01)
    assert (t.state, t.failures) == ("stopped", 0) and book.describe() == []
    assert isinstance(SupervisedThread("x", lambda: None, stop).describe(), dict)


def test_bad_events_never_reach_a_real_spout_and_later_events_do(
    fake_manager, registry_service, tmp_path, helpers
):
    """The receiver spout of the topologies (receivers/spout.py, run here without Spark)."""
    from receivers.spout import ReceiverSpout
    from topology.component import Collector, Context

    fake_manager.set_plans([helpers["stock_entry"]()])
    tenant, plan, stream = KEY
    spout = ReceiverSpout(
        {
            "registry": f"tcp://127.0.0.1:{registry_service.port}",
            "tenant": tenant,
            "plan": plan,
            "host": "127.0.0.1",
            "tick_ms": 0,
            "streams": {stream: ["symbol", "price", "volume"]},
        }
    )
    out = {stream: ["ts", "symbol", "price", "volume"]}
    collector = Collector("EventReceiverSpout", out)
    spout.open(Context(f"{plan}[{tenant}]", "EventReceiverSpout", 0, 1, 0, out), collector)
    w = make_worker(fake_manager, registry_service, tmp_path).start()
    got = []

    def pump():
        spout.next_batch()
        got.extend(row[1] for _, rows, _ in collector.take() for row in rows)
        return got

    client = ZmqEventClient(w.zmq_url)
    try:
        assert helpers["wait_for"](lambda: "-1234/StockAnalysis" in w.status()["plans"])
        assert (
            post(
                plan_url(w),
                [
                    {"timestamp": 10**30, "data": ["BAD", 1.0, 1]},
                    {"timestamp": 1, "data": ["\ud800", 1.0, 1]},
                    {"timestamp": 2, "data": ["HTTP", 1.0, 1]},
                ],
            )[1]["rejected"]
            == 2
        )
        client.send(KEY, [[2**63, ["BAD", 1.0, 1]], [3, ["ZMQ", 1.0, 1]]])
        client.send_raw(
            [
                b"-1234/StockAnalysis/StockStream",
                msgpack.packb([[4, ["\udc00", 1.0, 1]]], unicode_errors="surrogatepass"),
            ]
        )
        client.send(KEY, [[5, ["LATER", 1.0, 1]]])
        assert helpers["wait_for"](lambda: len(pump()) >= 3, timeout=15)
        assert got == ["HTTP", "ZMQ", "LATER"]
        assert {t["state"] for t in w.status()["threads"]} == {"running"}
    finally:
        client.close()
        w.stop()
        spout.close()
