"""Spout connections over real ZeroMQ sockets and a real registry service: lookup, connect,
batches, a spout that goes away and comes back elsewhere, bounded buffering meanwhile."""

import time

import pytest
import zmq

from cep.worker.inflow import SpoutConnection
from cep.protocol.registry_client import RegistryClient
from manager.registry.service import RegistryService
from cep.protocol.frames import decode_batch

TENANT, PLAN, STREAM = -1234, "P", "S"


def wait_for(cond, timeout=8.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end and not cond():
        time.sleep(0.01)
    return cond()


class FakeSpout:
    """A PULL socket registered as a receiver spout, like receivers/spout.py does."""

    def __init__(self, registry):
        self.sock = zmq.Context.instance().socket(zmq.PULL)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.port = self.sock.bind_to_random_port("tcp://127.0.0.1")
        self.registry = registry
        registry.register("receiver", TENANT, PLAN, "127.0.0.1", self.port, streams=[STREAM])
        self.events = []

    def drain(self):
        while self.sock.poll(10):
            stream, events = decode_batch(self.sock.recv())
            assert stream == STREAM
            self.events.extend(events)
        return len(self.events)

    def close(self):
        self.registry.unregister("receiver", TENANT, PLAN, f"tcp://127.0.0.1:{self.port}")
        self.sock.close(0)


@pytest.fixture
def registry():
    svc = RegistryService(port=0, bind_host="127.0.0.1")
    svc.start()
    client = RegistryClient(f"tcp://127.0.0.1:{svc.port}")
    yield svc, client
    client.close()
    svc.stop()


def conn(client, **kw):
    return SpoutConnection(
        client, TENANT, PLAN, STREAM, client="w1", reconnect_interval=0.1, connect_timeout=1.0, **kw
    )


def test_events_reach_the_spout_in_batches_and_status_counts_the_connection(registry):
    svc, client = registry
    spout = FakeSpout(client)
    c = conn(client, batch_size=100).start()
    c.offer([(i, ("a", i)) for i in range(250)])
    assert wait_for(lambda: spout.drain() == 250)
    assert [e[0] for e in spout.events] == list(range(250))
    assert wait_for(lambda: c.connected)
    status = client.status(TENANT, PLAN)
    assert [(x["client"], x["stream"]) for x in status["connections"]] == [("w1", STREAM)]
    assert c.metrics()["frames"] >= 3
    c.stop()
    assert client.status(TENANT, PLAN)["connections"] == []
    spout.close()


def test_no_spout_buffers_then_refuses_beyond_capacity(registry):
    _, client = registry
    c = conn(client, capacity=10).start()
    assert c.offer([(i, ("a", i)) for i in range(15)]) == 5
    m = c.metrics()
    assert (m["buffered"], m["refused"], m["connected"]) == (10, 5, False)
    assert wait_for(lambda: "no live receiver spout" in (c.metrics()["last_error"] or ""))
    spout = FakeSpout(client)  # a spout appears: the buffered events flow
    assert wait_for(lambda: spout.drain() == 10)
    c.stop()
    spout.close()


@pytest.mark.slow
def test_spout_goes_away_and_comes_back_elsewhere(registry):
    _, client = registry
    first = FakeSpout(client)
    c = conn(client).start()
    c.offer([(1, ("a", 1))])
    assert wait_for(lambda: first.drain() == 1)
    first.close()
    assert wait_for(lambda: not c.connected)
    c.offer([(2, ("a", 2)), (3, ("a", 3))])
    assert c.metrics()["buffered"] == 2
    second = FakeSpout(client)
    assert wait_for(lambda: second.drain() == 2)
    assert [e[0] for e in second.events] == [2, 3]
    assert c.metrics()["reconnects"] == 1 and c.metrics()["endpoint"].endswith(str(second.port))
    c.stop()
    second.close()


def test_full_buffer_makes_a_waiting_producer_wait_instead_of_refusing(registry):
    _, client = registry
    c = conn(client, capacity=10, batch_size=5).start()
    t0 = time.monotonic()
    assert c.offer([(i, ("a", i)) for i in range(15)], wait=0.3) == 5  # nobody drains: refused
    assert time.monotonic() - t0 >= 0.3
    spout = FakeSpout(client)
    assert c.offer([(100 + i, ("a", i)) for i in range(200)], wait=10) == 0  # drained meanwhile
    assert wait_for(lambda: spout.drain() == 210)
    assert c.metrics()["refused"] == 5
    c.stop()
    spout.close()
