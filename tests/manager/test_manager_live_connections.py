"""Plan status counts only live connections, with real ZeroMQ registry clients.

A Spark task of a topology was killed and its stage restarted: the killed publisher bolt never
released its connection, the restarted one connected again, and status showed
`Outflow connections : 2/1 established`. Now a client holds one connection per plan and stream
(the restarted instance replaces its old one), and a connection counts only while its endpoint
and its client (when the client heartbeats) are live."""

import time

import pytest

from cep.protocol.registry_client import Heartbeat, RegistryClient
from manager.registry.service import RegistryService
from manager.status import plan_status, status_text
from tests.manager.manager_helpers import poll

T, P = -1234, "Trades"
BOLT = "Trades[-1234]:EventPublisherBolt:0"
LIVENESS = 1.0


@pytest.fixture
def registry():
    service = RegistryService(0, "127.0.0.1", liveness=LIVENESS, heartbeat_interval=0.2)
    service.start()
    yield service
    service.stop()


def url(service):
    return f"tcp://127.0.0.1:{service.port}"


def status_of(service, client):
    reg = client.status(T, P)
    topo = {"state": "ACTIVE", "reason": "", "topology": "Trades[-1234]", "since": 0}
    return plan_status(topo, reg, ["TradeStream"], 1)


def publisher(service, worker, port):
    """A worker's CEP publisher endpoint, heartbeating as workers do."""
    client = RegistryClient(url(service))
    beat = Heartbeat(
        client,
        0.2,
        kind="publisher",
        tenant=T,
        plan=P,
        host="127.0.0.1",
        port=port,
        machine=["127.0.0.1"],
        worker=worker,
    ).start()
    return client, beat


def test_restarted_bolt_instance_replaces_its_unreleased_connection(registry):
    client, beat = publisher(registry, "w1", 41001)
    try:
        killed = RegistryClient(url(registry))
        killed.connect("publisher", T, P, "tcp://127.0.0.1:41001", client=BOLT)
        killed.close()  # the task dies: no release
        restarted = RegistryClient(url(registry))
        restarted.connect("publisher", T, P, "tcp://127.0.0.1:41001", client=BOLT)
        status = status_of(registry, client)
        assert status["outflow"]["text"] == "1/1 established"
        assert status_text(status).endswith("Outflow connections : all established")
        assert len(client.status(T, P)["connections"]) == 1
        restarted.close()
    finally:
        beat.stop()
        client.close()


def test_connection_of_a_client_that_stopped_heartbeating_is_not_counted(registry):
    client, beat = publisher(registry, "w1", 41002)
    try:
        dying = RegistryClient(url(registry))
        dying.connect("publisher", T, P, "tcp://127.0.0.1:41002", client="Other[-1234]:b:0")
        dying.status(T, P, client="Other[-1234]:b:0")  # a bolt's liveness check: heartbeat
        dying.close()  # then it hangs or dies, never releasing
        fresh = RegistryClient(url(registry))
        fresh.connect("publisher", T, P, "tcp://127.0.0.1:41002", client=BOLT)
        assert status_of(registry, client)["outflow"]["text"] == "2/1 established"
        deadline = time.monotonic() + 3 * LIVENESS
        while time.monotonic() < deadline:  # the live bolt keeps checking, the dead one not
            fresh.status(T, P, client=BOLT)
            if status_of(registry, client)["outflow"]["connected"] == 1:
                break
            time.sleep(0.1)
        assert status_of(registry, client)["outflow"]["text"] == "1/1 established"
        live = [c["client"] for c in client.status(T, P)["connections"] if c["live"]]
        assert live == [BOLT]
        fresh.close()
    finally:
        beat.stop()
        client.close()


def test_inflow_of_a_worker_that_died_without_release_drops_out(registry):
    """w1 reports worker-info and connects its stream, then dies; w2 connects: inflow shows
    only w2 once w1 is past the liveness window (w1's endpoint-side connection stays open)."""
    spout_client = RegistryClient(url(registry))
    spout = Heartbeat(
        spout_client,
        0.2,
        kind="receiver",
        tenant=T,
        plan=P,
        host="127.0.0.1",
        port=42001,
        machine=["127.0.0.1"],
        streams=["TradeStream"],
        component="Trades[-1234]:EventReceiverSpout:0",
    ).start()
    try:
        w1 = RegistryClient(url(registry))
        w1.worker_info(worker="w1", host="127.0.0.1", roles=["receiver"])
        w1.connect("receiver", T, P, "tcp://127.0.0.1:42001", client="w1", stream="TradeStream")
        w1.close()
        w2 = RegistryClient(url(registry))
        w2_beat = Heartbeat(
            w2,
            0.2,
            kind="publisher",
            tenant=T,
            plan=P,
            host="127.0.0.1",
            port=42002,
            machine=["127.0.0.1"],
            worker="w2",
        ).start()
        w2.worker_info(worker="w2", host="127.0.0.1", roles=["receiver", "publisher"])
        w2.connect("receiver", T, P, "tcp://127.0.0.1:42001", client="w2", stream="TradeStream")
        assert set(status_of(registry, spout_client)["inflow"]) == {"w1", "w2"}

        def only_w2():
            w2.worker_info(worker="w2", host="127.0.0.1", roles=["receiver", "publisher"])
            return list(status_of(registry, spout_client)["inflow"]) == ["w2"]

        poll(only_w2, 3 * LIVENESS, 0.1, "w1's connection no longer counted")
        assert status_of(registry, spout_client)["inflow"]["w2"]["text"] == "1/1 established"
        w2_beat.stop()
        w2.close()
    finally:
        spout.stop()
        spout_client.close()
