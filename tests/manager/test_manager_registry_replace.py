"""A restarted task replaces its predecessor's registration at once (issue 11: recovery
<= 30 s): same component instance, new socket -> the old endpoint and its connections go,
lookups answer the new one; other instances and other plans keep theirs. Over the real
ZeroMQ service and client too."""

import pytest

from cep.protocol.registry_client import RegistryClient
from manager.exceptions import RegistryError
from manager.registry.service import RegistryService
from manager.registry.table import EndpointTable

T, P = -1234, "Plan"
SPOUT0, SPOUT1 = "Plan[-1234]:spout:0", "Plan[-1234]:spout:1"


def test_a_restarted_spout_replaces_its_predecessor_and_its_connections():
    table = EndpointTable(liveness=30.0)
    old = table.register("receiver", T, P, "10.0.0.1", 5001, (), ["S"], component=SPOUT0)
    other = table.register("receiver", T, P, "10.0.0.1", 5002, (), ["S"], component=SPOUT1)
    table.register("receiver", T, "Else", "10.0.0.1", 5003, (), ["S"], component=SPOUT0)
    conn = table.connect("receiver", T, P, old, "worker-1", "S")
    new = table.register("receiver", T, P, "10.0.0.1", 6001, (), ["S"], component=SPOUT0)
    addresses = {k[3] for k in table.endpoints if k[2] == P}
    assert addresses == {new, other} and table.replaced == 1
    assert conn not in table.connections  # the worker's connection to the dead socket is gone
    with pytest.raises(RegistryError):
        table.connect("receiver", T, P, old, "worker-1", "S")
    # the other plan's endpoint of a same-named component is not touched
    assert ("receiver", T, "Else", "tcp://10.0.0.1:5003") in table.endpoints
    # a heartbeat of the same socket is a refresh, not a replacement
    table.register("receiver", T, P, "10.0.0.1", 6001, (), ["S"], component=SPOUT0)
    assert table.replaced == 1
    # a late heartbeat of the replaced task (hung, not dead) cannot take the entry back
    with pytest.raises(RegistryError, match="replaced by a restarted task"):
        table.register("receiver", T, P, "10.0.0.1", 5001, (), ["S"], component=SPOUT0)
    assert {k[3] for k in table.endpoints if k[2] == P} == {new, other}


def test_without_a_component_nothing_is_replaced():
    table = EndpointTable(liveness=30.0)
    table.register("publisher", T, P, "10.0.0.1", 7001, (), worker="w1")
    table.register("publisher", T, P, "10.0.0.1", 7002, (), worker="w2")
    assert len(table.endpoints) == 2 and table.replaced == 0


def test_lookup_over_zeromq_answers_the_new_endpoint_at_once():
    svc = RegistryService(port=0, bind_host="127.0.0.1", liveness=30.0)
    svc.start()
    client = RegistryClient(f"tcp://127.0.0.1:{svc.port}", timeout=2.0)
    try:
        client.register("receiver", T, P, "127.0.0.1", 5001, [], ["S"], component=SPOUT0)
        first = client.lookup("receiver", T, P, stream="S")["endpoint"]
        client.connect("receiver", T, P, first, client="worker-1", stream="S")
        client.register("receiver", T, P, "127.0.0.1", 5002, [], ["S"], component=SPOUT0)
        status = client.status(T, P)
        assert [r["endpoint"] for r in status["receivers"]] == ["tcp://127.0.0.1:5002"]
        assert status["connections"] == []
        for _ in range(3):  # never the dead one again, though it was inside the liveness window
            assert client.lookup("receiver", T, P, stream="S")["endpoint"] == "tcp://127.0.0.1:5002"
    finally:
        client.close()
        svc.stop()
