"""Issue 13: a client of a manager group registers and counts its connections with every
registry, so a follower's registry is warm; real registries over real ZeroMQ sockets."""

import pytest

from cep.protocol.exceptions import RegistryError
from cep.protocol.registry_group import RegistryGroup, registry_client
from cep.protocol.registry_client import RegistryClient
from manager.registry.service import RegistryService
from tests.manager.manager_helpers import free_port


def service(port=0):
    s = RegistryService(port, "127.0.0.1", liveness=30.0)
    s.start()
    return s


@pytest.fixture
def two():
    a, b = service(), service()
    yield a, b
    a.stop()
    b.stop()


def url(s):
    return f"tcp://127.0.0.1:{s.port}"


def receivers(s, plan="P"):
    return s.table.status(-1234, plan)["receivers"]


def live_connections(s, plan="P"):
    return [c for c in s.table.status(-1234, plan)["connections"] if c["live"]]


def test_register_and_connect_reach_every_registry_release_leaves_them(two):
    a, b = two
    group = registry_client(f"{url(a)},{url(b)}", timeout=1.0)
    assert isinstance(group, RegistryGroup)
    assert isinstance(registry_client(url(a)), RegistryClient)  # one address: as before
    group.register("receiver", -1234, "P", "127.0.0.1", 5555, streams=["S"])
    assert len(receivers(a)) == 1 and len(receivers(b)) == 1
    ep = group.lookup("receiver", -1234, "P", stream="S")
    cid = group.connect("receiver", -1234, "P", ep["endpoint"], client="w1", stream="S")
    assert len(live_connections(a)) == 1 and len(live_connections(b)) == 1
    group.release(cid)
    assert live_connections(a) == [] and live_connections(b) == []
    with pytest.raises(RegistryError):
        group.release(cid)
    group.close()


def test_a_registry_down_at_connect_time_gets_the_connection_when_it_is_back(two):
    a, b = two
    port_b = b.port
    group = RegistryGroup([url(a), url(b)], timeout=0.5)
    group.register("receiver", -1234, "P", "127.0.0.1", 5555, streams=["S"])
    b.stop()  # a manager restarts: its registry's table is empty when it is back
    ep = group.lookup("receiver", -1234, "P", stream="S")
    group.connect("receiver", -1234, "P", ep["endpoint"], client="w1", stream="S")
    assert len(live_connections(a)) == 1
    back = service(port_b)
    try:
        group.register("receiver", -1234, "P", "127.0.0.1", 5555, streams=["S"])  # heartbeat
        assert len(receivers(back)) == 1
        assert len(live_connections(back)) == 1  # repaired by the heartbeat round
        assert len(live_connections(a)) == 1  # not doubled where it was already counted
    finally:
        back.stop()
        group.close()


def test_a_client_learns_the_registries_of_the_group_from_a_reply(two):
    a, b = two
    a.peers = lambda: [url(a), url(b)]
    group = registry_client(url(a) + ",", timeout=1.0)  # a group of one, as a manager passes
    group.register("publisher", -1234, "P", "127.0.0.1", 6000, worker="w1")
    assert group.urls == [url(a), url(b)]
    group.register("publisher", -1234, "P", "127.0.0.1", 6000, worker="w1")
    assert len(b.table.status(-1234, "P")["publishers"]) == 1
    group.close()


def test_lookups_fail_over_and_no_registry_is_a_clear_error():
    live = service()
    dead = f"tcp://127.0.0.1:{free_port()}"
    try:
        group = RegistryGroup([dead, url(live)], timeout=0.3)
        group.register("receiver", -1234, "P", "127.0.0.1", 5555, streams=["S"])
        assert group.lookup("receiver", -1234, "P", stream="S")["port"] == 5555
        group.close()
    finally:
        live.stop()
    group = RegistryGroup([dead], timeout=0.2)
    with pytest.raises(RegistryError, match="did not answer"):
        group.register("receiver", -1234, "P", "127.0.0.1", 5555, streams=["S"])
    group.close()


def test_a_client_that_only_looks_up_learns_the_group_too(two):
    """A publisher bolt never registers: its lookups' replies tell it the group, so its
    connect is counted at every registry (the follower's outflow status is right)."""
    a, b = two
    a.peers = lambda: [url(a), url(b)]
    for s in (a, b):
        s.table.register("receiver", -1234, "P", "127.0.0.1", 5555, streams=["S"])
    bolt = registry_client(url(a) + ",", timeout=1.0)
    ep = bolt.lookup("receiver", -1234, "P", stream="S")
    assert bolt.urls == [url(a), url(b)]
    bolt.connect("receiver", -1234, "P", ep["endpoint"], client="bolt-1", stream="S")
    assert len(live_connections(a)) == 1 and len(live_connections(b)) == 1
    bolt.close()
