"""The publisher bolt against a real registry, real ZeroMQ sockets and the real worker
publisher service: a slow sink means backpressure (the bolt waits) and never lost events; a
publisher that goes away while the bolt is idle is replaced by another worker's publisher and
the events queued meanwhile arrive there."""

import time

import pytest

from cep.protocol.registry_client import RegistryClient
from cep.protocol.identity import machine_identity
from manager.registry.service import RegistryService
from publishers.base import Sink
from publishers.bolt import PublisherBolt
from publishers.service import PublisherService
from publishers.sink_set import SinkSet
from topology.component import Batch, Collector, Context

T, P, S = -1234, "Flow", "Out"


class SlowSink(Sink):
    """Records every event's sequence number; sleeps per batch (a slow destination)."""

    type = "slow"

    def __init__(self, delay):
        super().__init__(S, {})
        self.delay, self.seqs = delay, []

    def write_batch(self, events):
        time.sleep(self.delay)
        self.seqs.extend(row[0] for _, row in events)


@pytest.fixture
def registry():
    svc = RegistryService(port=0, bind_host="127.0.0.1", heartbeat_interval=0.1)
    svc.start()
    client = RegistryClient(f"tcp://127.0.0.1:{svc.port}")
    yield svc, client
    client.close()
    svc.stop()


def publisher(client, sink, worker, machine=(), rcvhwm=1000):
    sset = SinkSet(worker)
    sset.add(S, sink)
    svc = PublisherService(sset, "127.0.0.1", rcvhwm=rcvhwm).start()
    client.register("publisher", T, P, "127.0.0.1", svc.port, machine=machine, worker=worker)
    return svc


def new_bolt(url, **extra):
    bolt = PublisherBolt(
        {
            "registry": url,
            "tenant": T,
            "plan": P,
            "streams": {S: ["seq"]},
            "host": "127.0.0.1",
            "retry_interval": 0.05,
            "connect_timeout": 0.5,
            **extra,
        }
    )
    bolt.prepare(Context(f"{P}[{T}]", "EventPublisherBolt", 0, 1, 0, {}), Collector("p", {}))
    return bolt


def rows(start, n):
    return [(1000 + i, i) for i in range(start, start + n)]


def wait(cond, timeout, what):
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.02)


def test_a_slow_publisher_gets_every_event_of_large_frames_in_order(registry):
    """4,000-event batches, 600,000 events, a sink taking 20 ms a batch (3 s in all) behind a
    4-frame receive queue and the loopback's kernel buffers (tens of frames), and the previous bolt's send timeout (200 ms, which declared such a
    publisher dead): all arrive in order, and the bolt's execute waited for the sink."""
    svc_reg, client = registry
    sink = SlowSink(0.02)
    svc = publisher(client, sink, "w1", rcvhwm=4)
    bolt = new_bolt(
        f"tcp://127.0.0.1:{svc_reg.port}", send_timeout_ms=200, buffer_limit=20000, sndhwm=4
    )
    try:
        wait(lambda: bolt.connected, 10, "the bolt to connect")  # waits below are the sink's
        n, size = 600_000, 4000
        for start in range(0, n, size):
            bolt.execute(Batch(rows(start, size), S))
            assert bolt.pending_events <= 20000 + size  # bounded: execute waits for room
        assert bolt.waited_s > 0.3  # 150 frames do not fit in the queues: it waited
        wait(lambda: len(sink.seqs) >= n, 60, "every event at the sink")
        time.sleep(0.2)
        assert sink.seqs == list(range(n))
        assert bolt.reconnects == 0
    finally:
        bolt.cleanup()
        svc.stop()


def test_a_batch_larger_than_the_buffer_is_sent_whole(registry):
    svc_reg, client = registry
    sink = SlowSink(0.0)
    svc = publisher(client, sink, "w1")
    bolt = new_bolt(f"tcp://127.0.0.1:{svc_reg.port}")  # buffer_limit 100,000 events
    try:
        bolt.execute(Batch(rows(0, 150_000), S))
        wait(lambda: len(sink.seqs) >= 150_000, 30, "the whole batch")
        assert sink.seqs == list(range(150_000))
    finally:
        bolt.cleanup()
        svc.stop()


def test_a_publisher_gone_while_idle_is_replaced_by_another_workers(registry):
    """Publisher A (same machine, so preferred) stops while the bolt is idle, without
    unregistering (a crash: the registry still lists it); the bolt notices the disconnect by
    itself, moves to B, and the events executed meanwhile reach B."""
    svc_reg, client = registry
    sink_a, sink_b = SlowSink(0.0), SlowSink(0.0)
    svc_a = publisher(client, sink_a, "wA", machine=machine_identity("127.0.0.1"))
    bolt = new_bolt(f"tcp://127.0.0.1:{svc_reg.port}")
    svc_b = None
    try:
        bolt.execute(Batch(rows(0, 100), S))
        wait(lambda: len(sink_a.seqs) == 100, 10, "the first events at A")
        svc_b = publisher(client, sink_b, "wB")
        endpoint_a = bolt.endpoint
        svc_a.stop()  # A's socket closes; nothing is executed now: the bolt is idle
        wait(lambda: bolt.connected and bolt.endpoint != endpoint_a, 15, "a connection to B")
        assert bolt.endpoint == f"tcp://127.0.0.1:{svc_b.port}"
        assert [
            c["client"] for c in client.status(T, P)["connections"] if c["endpoint"] == endpoint_a
        ] == []  # A's connection was released
        bolt.execute(Batch(rows(100, 100), S))
        wait(lambda: len(sink_b.seqs) == 100, 10, "the next events at B")
        assert sink_b.seqs == list(range(100, 200)) and bolt.reconnects >= 1
    finally:
        bolt.cleanup()
        for svc in (svc_a, svc_b):
            if svc is not None and svc._thread.is_alive():
                svc.stop()


def test_events_queued_while_no_publisher_is_live_arrive_at_the_next_one(registry):
    """The only publisher goes away; batches executed while none is live wait in the bolt
    and reach the publisher that registers later, in order."""
    svc_reg, client = registry
    sink_a, sink_b = SlowSink(0.0), SlowSink(0.0)
    svc_a = publisher(client, sink_a, "wA")
    bolt = new_bolt(f"tcp://127.0.0.1:{svc_reg.port}")
    svc_b = None
    try:
        bolt.execute(Batch(rows(0, 10), S))
        wait(lambda: len(sink_a.seqs) == 10, 10, "events at A")
        svc_a.stop()
        client.unregister("publisher", T, P, f"tcp://127.0.0.1:{svc_a.port}")
        wait(lambda: not bolt.connected, 10, "the bolt to notice")
        for start in range(10, 5010, 1000):
            bolt.execute(Batch(rows(start, 1000), S))
        assert bolt.pending_events == 5000
        svc_b = publisher(client, sink_b, "wB")
        wait(lambda: len(sink_b.seqs) == 5000, 15, "the queued events at B")
        assert sink_b.seqs == list(range(10, 5010))
    finally:
        bolt.cleanup()
        if svc_b is not None:
            svc_b.stop()


def test_a_publisher_that_stops_heartbeating_is_left_for_a_live_one():
    """A (same machine, preferred) keeps its socket open and taking frames but stops
    heartbeating (a hung worker); once the registry's liveness window passes, the bolt moves
    to B, which heartbeats, and the next events reach B."""
    from cep.protocol.registry_client import Heartbeat

    svc_reg = RegistryService(port=0, bind_host="127.0.0.1", liveness=1.0, heartbeat_interval=0.1)
    svc_reg.start()
    client = RegistryClient(f"tcp://127.0.0.1:{svc_reg.port}")
    sink_a, sink_b = SlowSink(0.0), SlowSink(0.0)
    svc_a = publisher(client, sink_a, "wA", machine=machine_identity("127.0.0.1"))
    bolt = new_bolt(f"tcp://127.0.0.1:{svc_reg.port}", liveness_check=0.2)
    svc_b = beat = None
    try:
        bolt.execute(Batch(rows(0, 10), S))
        wait(lambda: len(sink_a.seqs) == 10, 10, "events at A")
        sset = SinkSet("wB")
        sset.add(S, sink_b)
        svc_b = PublisherService(sset, "127.0.0.1").start()
        beat = Heartbeat(
            client,
            0.1,
            kind="publisher",
            tenant=T,
            plan=P,
            host="127.0.0.1",
            port=svc_b.port,
            worker="wB",
        ).start()
        wait(
            lambda: bolt.endpoint == f"tcp://127.0.0.1:{svc_b.port}" and bolt.connected,
            10,
            "the bolt to leave A for B",
        )
        bolt.execute(Batch(rows(10, 10), S))
        wait(lambda: len(sink_b.seqs) == 10, 10, "events at B")
        assert sink_a.seqs == list(range(10)) and sink_b.seqs == list(range(10, 20))
    finally:
        bolt.cleanup()
        if beat is not None:
            beat.stop(unregister=False)
        for svc in (svc_a, svc_b):
            if svc is not None:
                svc.stop()
        client.close()
        svc_reg.stop()
