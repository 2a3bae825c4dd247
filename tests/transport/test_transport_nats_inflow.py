"""The inflow of the NATS JetStream transport on a real nats-server: a worker's NatsInflow
publishes event frames that JetStream confirms before offer() returns; the NATS receiver
spout reads them through its durable consumer, keeps the stream sequence in its snapshot,
and a spout restored from a snapshot emits again exactly what followed it."""

import threading

import pytest

from cep.policy.exceptions import PolicyViolation
from cep.worker.nats_inflow import NatsInflow
from connectors.nats_transport import (
    DEFAULT_URL,
    check_kind,
    inflow_stream,
    inflow_subject,
    transport_url,
)
from receivers.nats_spout import NatsReceiverSpout
from topology.component import Collector, Context

T, P = -1234, "NatsIn"
OUT = {"S": ["ts", "a", "b"], "R": ["ts", "x"]}


def spout(url, plan=P, index=0, parallel=1, restore=None, checkpoints=True, max_frames=64):
    s = NatsReceiverSpout(
        {
            "tenant": T,
            "plan": plan,
            "streams": {"S": ["a", "b"], "R": ["x"]},
            "nats_url": url,
            "tick_ms": 0,
            "fetch_wait_ms": 50,
            "max_frames": max_frames,
        }
    )
    collector = Collector("EventReceiverSpout", OUT)
    s.open(Context(f"{plan}[{T}]", "EventReceiverSpout", index, parallel, 0, OUT), collector)
    if checkpoints:
        s.checkpoint_restored(None)
    if restore is not None:
        s.restore(restore)
    return s, collector


def drain(s, collector, want, rounds=200):
    rows = {}
    for _ in range(rounds):
        s.next_batch()
        for stream, batch, _ in collector.take():
            rows.setdefault(stream, []).extend(batch)
        if sum(len(v) for v in rows.values()) >= want:
            break
    return rows


def inflow(url, stream="S", plan=P, **kw):
    return NatsInflow(url, T, plan, stream, "w1", batch_size=100, **kw).start()


def wait_connected(conn):
    ev = threading.Event()
    for _ in range(200):
        if conn.connected:
            return
        ev.wait(0.05)
    pytest.fail(f"inflow not connected: {conn.last_error}")


def test_names_and_connection_rules():
    assert inflow_subject(-1234, "My Plan", "S.x") == "cep.in.-1234.My_Plan.S_x"
    assert inflow_stream(-1234, "P") == "CEP_IN_-1234_P"
    assert transport_url("", {"bus": "nats://10.0.0.5:4222"}) == DEFAULT_URL
    assert transport_url("bus", {"bus": "nats://u:p@10.0.0.5:4222"}) == "nats://u:p@10.0.0.5:4222"
    with pytest.raises(PolicyViolation, match="'nope' is not a configured.*bus"):
        transport_url("nope", {"bus": "nats://h:1"})
    with pytest.raises(PolicyViolation, match="needs a nats:// or tls://"):
        transport_url("mq", {"mq": "mqtt://h:1883"})
    assert check_kind("NATS") == "nats"
    with pytest.raises(ValueError, match="'kafka' is not one of zmq, nats"):
        check_kind("kafka")


def test_offer_returns_once_jetstream_stored_the_events_and_the_spout_emits_them(nats_server):
    conn = inflow(nats_server.url)
    other = inflow(nats_server.url, stream="R")
    try:
        wait_connected(conn)
        wait_connected(other)
        assert conn.offer([[i, ["k", i]] for i in range(250)]) == 0
        assert other.offer([[7, [1.5]]]) == 0
        m = conn.metrics()
        assert m["sent"] == 250 and m["frames"] == 3 and m["buffered"] == 0
        s, col = spout(nats_server.url)
        try:
            rows = drain(s, col, 251)
            assert rows["S"] == [(i, "k", i) for i in range(250)]
            assert rows["R"] == [(7, 1.5)]
            assert s.snapshot() == {"nats": 4}  # four messages: three frames of S, one of R
        finally:
            s.close()
    finally:
        conn.stop()
        other.stop()


def test_a_restored_spout_emits_exactly_what_followed_its_checkpoint(nats_server):
    plan = "NatsRestore"
    conn = inflow(nats_server.url, plan=plan)
    try:
        wait_connected(conn)
        for k in range(5):  # five frames of 100
            assert conn.offer([[k * 100 + i, ["a", k * 100 + i]] for i in range(100)]) == 0
        s, col = spout(nats_server.url, plan, max_frames=2)
        rows = drain(s, col, 200, rounds=1)["S"]
        state = s.snapshot()
        first = len(rows)
        assert first == 200 and state == {"nats": 2}
        rows += drain(s, col, 500 - first)["S"]
        assert [r[2] for r in rows] == list(range(500))
        s.close()  # a failure: nothing was acknowledged (no checkpoint completed)
        restored, col2 = spout(nats_server.url, plan, restore=state)
        again = drain(restored, col2, 500 - first)["S"]
        assert [r[2] for r in again] == list(range(first, 500))
        # a completed checkpoint acknowledges up to its position; a start without a
        # checkpoint resumes there
        restored.checkpoint_complete(1, restored.snapshot())
        restored.close()
        assert conn.offer([[999, ["z", 999]]]) == 0
        fresh, col3 = spout(nats_server.url, plan)
        assert drain(fresh, col3, 1)["S"] == [(999, "z", 999)]
        fresh.close()
    finally:
        conn.stop()


def test_parallel_spouts_split_the_messages(nats_server):
    plan = "NatsSplit"
    conn = inflow(nats_server.url, plan=plan)
    try:
        wait_connected(conn)
        for k in range(6):
            assert conn.offer([[k, ["p", k]]]) == 0
        a, ca = spout(nats_server.url, plan, 0, 2)
        b, cb = spout(nats_server.url, plan, 1, 2)
        got_a, got_b = drain(a, ca, 3).get("S", []), drain(b, cb, 3).get("S", [])
        a.close()
        b.close()
        assert sorted(r[2] for r in got_a + got_b) == list(range(6))
        assert got_a and got_b
    finally:
        conn.stop()


def test_without_a_server_every_event_is_refused():
    from tests.conftest import free_port

    conn = NatsInflow(
        f"nats://127.0.0.1:{free_port()}", T, P, "S", "w1", reconnect_interval=0.1
    ).start()
    try:
        assert conn.offer([[1, ["a", 1]], [2, ["b", 2]]]) == 2
        assert conn.metrics()["refused"] == 2 and not conn.metrics()["connected"]
    finally:
        conn.stop()


def test_an_unconfirmed_offer_withdraws_what_was_not_sent():
    """The server stops answering in the middle of an offer: the offer fails after
    confirm_timeout and withdraws its events the sender had not taken, so the client's retry
    does not store them twice; later offers go on (a fake publisher, no server)."""
    from cep.worker.nats_inflow import NatsInflowError

    conn = NatsInflow("nats://127.0.0.1:1", T, P, "S", "w1", batch_size=10, confirm_timeout=0.3)
    conn.connected = True  # as if connected; no sender thread: the test sends the rounds
    with pytest.raises(NatsInflowError, match="25 of the 25 events were withdrawn"):
        conn.offer([[i, ["a", i]] for i in range(25)])
    published = []
    conn._publish_round = lambda frames: published.extend(frames) or 0
    conn._encode = lambda events: b"frame"
    while conn._send_round():
        pass
    assert published == [] and conn._confirmed == 25 and conn.buffered == 0
    done = threading.Thread(target=lambda: conn.offer([[99, ["b", 99]]]))
    done.start()
    while done.is_alive() and not conn._send_round():
        pass
    done.join(5)
    assert [events for _, _, events in published] == [[[99, ["b", 99]]]]
    assert conn.metrics()["withdrawn"] == 25
