"""The registry's locality rule over real ZeroMQ: registrations carry the sender's real
machine identity (its interface addresses, never loopback, whatever host it advertises), a
lookup prefers an endpoint on the requester's own machine even when it has more open
connections, and without one takes the fewest connections. The rig test
(tests/machines/test_machines_cep_worker_e2e.py) checks the same on three network namespaces:
each spout registered with its executor's namespace address."""

import time

import pytest

from cep.protocol.identity import interface_addresses, machine_identity
from cep.protocol.registry_client import RegistryClient
from manager.registry.service import RegistryService
from publishers.base import Sink
from publishers.bolt import PublisherBolt
from publishers.service import PublisherService
from publishers.sink_set import SinkSet
from topology.component import Batch, Collector, Context

T, P = -1234, "Local"
ELSEWHERE = ["10.254.77.9"]  # another machine's identity (not an address of this one)


@pytest.fixture
def client():
    svc = RegistryService(port=0, bind_host="127.0.0.1", liveness=300.0)  # nothing expires here
    svc.start()
    c = RegistryClient(f"tcp://127.0.0.1:{svc.port}", timeout=2.0)
    yield c
    c.close()
    svc.stop()


def _needs_an_interface():
    if not interface_addresses():
        pytest.skip("this machine has no non-loopback interface address to identify it")


def test_a_same_machine_publisher_wins_over_fewer_connections(client):
    _needs_an_interface()
    here = client.register(
        "publisher", T, P, "127.0.0.1", 6001, machine_identity("127.0.0.1"), worker="local"
    )["endpoint"]
    far = client.register("publisher", T, P, ELSEWHERE[0], 6002, ELSEWHERE, worker="remote")[
        "endpoint"
    ]
    for i in range(3):  # the local worker is the busier one
        client.connect("publisher", T, P, here, client=f"Local[-1234]:Pub:{i}")
    bolt_here = client.lookup("publisher", T, P, machine=machine_identity())
    assert (bolt_here["endpoint"], bolt_here["local"], bolt_here["connections"]) == (here, True, 3)
    # a bolt on a third machine: no local worker, so the fewest connections
    bolt_far = client.lookup("publisher", T, P, machine=["10.254.78.1"])
    assert (bolt_far["endpoint"], bolt_far["local"]) == (far, False)


def test_an_advertised_loopback_host_does_not_make_two_machines_one(client):
    """A spout advertising 127.0.0.1 (the embedded loopback cluster) is identified by this
    machine's interface addresses; a worker elsewhere that also advertises 127.0.0.1 is not
    on its machine, a worker here is."""
    _needs_an_interface()
    spout = machine_identity("127.0.0.1")
    assert "127.0.0.1" not in spout and spout == sorted(set(interface_addresses()))
    client.register("receiver", T, P, "127.0.0.1", 40001, spout, ["S"], component="spout:0")
    client.register("receiver", T, P, ELSEWHERE[0], 40002, ELSEWHERE, ["S"], component="spout:1")
    # the spout elsewhere has a connection, the local one none: either way a worker here
    # gets the local one, and a worker elsewhere advertising loopback gets the fewest
    client.connect("receiver", T, P, "tcp://10.254.77.9:40002", client="w-far", stream="S")
    here = client.lookup("receiver", T, P, stream="S", machine=machine_identity("127.0.0.1"))
    assert (here["port"], here["local"]) == (40001, True)
    client.connect("receiver", T, P, "tcp://127.0.0.1:40001", client="w-here", stream="S")
    client.connect("receiver", T, P, "tcp://127.0.0.1:40001", client="w-here2", stream="S")
    other = client.lookup("receiver", T, P, stream="S", machine=["127.0.0.1", "10.254.79.3"])
    assert (other["port"], other["local"]) == (40002, False)


class Recording(Sink):
    type = "recording"

    def __init__(self):
        super().__init__("Out", {})
        self.rows = []

    def write_batch(self, events):
        self.rows.extend(row for _, row in events)


def _publisher(client, worker, machine):
    """A real worker publisher service on loopback, registered with `machine` as its identity."""
    sinks, sink = SinkSet(worker), Recording()
    sinks.add("Out", sink)
    svc = PublisherService(sinks, "127.0.0.1").start()
    endpoint = client.register(
        "publisher", T, P, "127.0.0.1", svc.port, machine=machine, worker=worker
    )["endpoint"]
    return svc, sink, endpoint


def test_a_publisher_bolt_advertising_loopback_goes_to_the_worker_on_its_machine(client):
    """The real publisher bolt, configured with host 127.0.0.1 as on the embedded cluster,
    identifies with this machine's interface addresses: it connects to the worker registered
    with them, though that worker already has three connections and the other none."""
    _needs_an_interface()
    here_svc, here_sink, here = _publisher(client, "local", machine_identity("127.0.0.1"))
    far_svc, far_sink, _ = _publisher(client, "remote", ELSEWHERE)
    for i in range(3):
        client.connect("publisher", T, P, here, client=f"other:{i}")
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
    try:
        bolt.execute(Batch([(1000 + i, i) for i in range(5)], "Out"))
        deadline = time.monotonic() + 10
        while len(here_sink.rows) < 5 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert bolt.endpoint == here and [r[0] for r in here_sink.rows] == list(range(5))
        assert far_sink.rows == []
    finally:
        bolt.cleanup()
        here_svc.stop()
        far_svc.stop()


def test_a_lookup_avoids_the_endpoint_the_requester_failed_to_reach(client):
    """A dead worker's publisher is still registered and live (its heartbeats are not missed
    yet) and has no connections left, so it would be the fewest: `avoid` skips it while
    another is live, and takes it when it is the only one."""
    dead = client.register("publisher", T, P, "10.254.77.9", 6001, ["10.254.77.9"], worker="dead")[
        "endpoint"
    ]
    alive = client.register(
        "publisher", T, P, "10.254.77.10", 6002, ["10.254.77.10"], worker="alive"
    )["endpoint"]
    client.connect("publisher", T, P, alive, client="bolt:1")
    assert client.lookup("publisher", T, P)["endpoint"] == dead  # the fewest connections
    assert client.lookup("publisher", T, P, avoid=[dead])["endpoint"] == alive
    # the same machine as the one avoided does not bring it back either
    assert (
        client.lookup("publisher", T, P, machine=["10.254.77.9"], avoid=[dead])["endpoint"] == alive
    )
    client.unregister("publisher", T, P, alive)
    assert client.lookup("publisher", T, P, avoid=[dead])["endpoint"] == dead  # nothing else


def test_a_publisher_bolt_whose_worker_died_goes_to_the_other_not_back(client):
    """The bolt's local worker dies (its service closes; its registration is still live, with
    no connections, where the other worker has three): the bolt moves to the other worker
    and sends there what it queued, without trying the dead one again."""
    _needs_an_interface()
    here_svc, here_sink, here = _publisher(client, "local", machine_identity("127.0.0.1"))
    far_svc, far_sink, far = _publisher(client, "remote", ELSEWHERE)
    for i in range(3):
        client.connect("publisher", T, P, far, client=f"other:{i}")
    bolt = PublisherBolt(
        {
            "registry": client.url,
            "tenant": T,
            "plan": P,
            "streams": {"Out": ["seq"]},
            "host": "127.0.0.1",
            "retry_interval": 0.05,
            "connect_timeout": 1.0,
        }
    )
    bolt.prepare(Context(f"{P}[{T}]", "EventPublisherBolt", 0, 1, 0, {}), Collector("p", {}))
    try:
        bolt.execute(Batch([(1000 + i, i) for i in range(5)], "Out"))
        _wait(lambda: len(here_sink.rows) == 5, "the first batch at the local worker")
        here_svc.stop()  # the local worker dies; the registry still lists it as live
        bolt.execute(Batch([(2000 + i, i) for i in range(5, 10)], "Out"))
        _wait(
            lambda: len(far_sink.rows) == 5,
            "the second batch at the other worker",
            detail=bolt.custom_metrics,
        )
        assert [r[0] for r in far_sink.rows] == list(range(5, 10))
        assert bolt.endpoint == far and bolt.reconnects == 1, (bolt.endpoint, bolt.reconnects)
    finally:
        bolt.cleanup()
        far_svc.stop()


def _wait(cond, what, timeout=60.0, detail=dict):
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}: {detail()}"
        time.sleep(0.02)
