"""The publisher bolt keeps each frame until the worker's publisher service acknowledges it
(once its sinks took it), over real ZeroMQ sockets and a real registry: a worker that took
frames and died before acknowledging them does not lose them (they go to the next worker,
counted as resent), a checkpoint holds them, and acknowledged frames are forgotten."""

import time

import pytest
import zmq

from cep.protocol.identity import interface_addresses, machine_identity
from cep.protocol.registry_client import RegistryClient
from manager.registry.service import RegistryService
from publishers.bolt import PublisherBolt
from publishers.service import PublisherService
from publishers.sink_set import SinkSet
from tests.manager.test_manager_registry_locality import ELSEWHERE, Recording
from topology.component import Batch, Collector, Context

T, P = -1234, "Acks"


@pytest.fixture
def client():
    svc = RegistryService(port=0, bind_host="127.0.0.1", liveness=300.0)
    svc.start()
    c = RegistryClient(f"tcp://127.0.0.1:{svc.port}", timeout=2.0)
    yield c
    c.close()
    svc.stop()


class Silent:
    """A worker's publisher port that takes frames and never acknowledges (a worker that
    dies before its sinks take what it received)."""

    def __init__(self, client, machine):
        self.sock = zmq.Context.instance().socket(zmq.ROUTER)
        self.sock.setsockopt(zmq.LINGER, 0)
        port = self.sock.bind_to_random_port("tcp://127.0.0.1")
        self.endpoint = client.register(
            "publisher", T, P, "127.0.0.1", port, machine=machine, worker="silent"
        )["endpoint"]
        self.frames = 0

    def take(self):
        while self.sock.poll(0):
            self.sock.recv_multipart()
            self.frames += 1
        return self.frames


def _wait(cond, what, timeout=60.0):
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def _bolt(client):
    bolt = PublisherBolt(
        {
            "registry": client.url,
            "tenant": T,
            "plan": P,
            "streams": {"Out": ["seq"]},
            "host": "127.0.0.1",
            "retry_interval": 0.05,
            "connect_timeout": 2.0,
        }
    )
    bolt.prepare(Context(f"{P}[{T}]", "EventPublisherBolt", 0, 1, 0, {}), Collector("p", {}))
    return bolt


def _service(client, machine):
    sinks, sink = SinkSet("live"), Recording()
    sinks.add("Out", sink)
    svc = PublisherService(sinks, "127.0.0.1").start()
    endpoint = client.register(
        "publisher", T, P, "127.0.0.1", svc.port, machine=machine, worker="live"
    )["endpoint"]
    return svc, sink, endpoint


def test_frames_a_worker_took_without_acknowledging_go_to_the_next_worker(client):
    if not interface_addresses():
        pytest.skip("this machine has no non-loopback interface address to identify it")
    silent = Silent(client, machine_identity("127.0.0.1"))  # same machine: chosen first
    svc, sink, live = _service(client, ELSEWHERE)
    bolt = _bolt(client)
    try:
        bolt.execute(Batch([(1000 + i, i) for i in range(5)], "Out"))
        bolt.execute(Batch([(2000 + i, i) for i in range(5, 8)], "Out"))
        _wait(lambda: silent.take() >= 3, "the start notice and both frames at the silent port")
        assert bolt.endpoint == silent.endpoint and len(bolt.unacked) == 3
        assert bolt.pending_events == 8  # sent, not acknowledged: still the bolt's
        # a checkpoint now holds the two data frames
        assert [n for _, n in bolt.checkpoint_state()["pending"]] == [5, 3]
        silent.sock.close(0)  # the worker dies
        _wait(lambda: len(sink.rows) == 8, "the frames at the next worker's sink")
        assert [r[0] for r in sink.rows] == list(range(8))  # in order
        assert bolt.endpoint == live and bolt.resent == 8
        _wait(lambda: not bolt.unacked and bolt.pending_events == 0, "the acknowledgements")
        assert bolt.checkpoint_state()["pending"] == []
    finally:
        bolt.cleanup()
        svc.stop()


def test_acknowledged_frames_are_forgotten_and_nothing_is_resent(client):
    svc, sink, live = _service(client, ELSEWHERE)
    bolt = _bolt(client)
    try:
        for k in range(20):
            bolt.execute(Batch([(k * 10 + i, k * 10 + i) for i in range(10)], "Out"))
        _wait(lambda: len(sink.rows) == 200, "every row at the sink")
        _wait(lambda: not bolt.unacked and bolt.pending_events == 0, "the acknowledgements")
        assert bolt.resent == 0 and bolt.custom_metrics()["unacknowledged"] == 0
        assert [r[0] for r in sink.rows] == list(range(200))
    finally:
        bolt.cleanup()
        svc.stop()
