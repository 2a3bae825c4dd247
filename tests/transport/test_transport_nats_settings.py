"""topology.transport: the manager's settings choose the topology's spout and publisher bolt
and tell the workers; a NATS server comes from a named connection (loopback by default),
an unknown transport or connection stops the manager's start with the reason."""

import pytest

from cep.worker.plans import spec_from_deployment
from manager.exceptions import ConfigError
from manager.server import _transport
from manager.settings import load_manager_settings
from manager.topology_builder import build_topology
from tests.manager.manager_plans import STAT_XML


def settings(**overrides):
    return load_manager_settings(overrides=overrides, env={})


def classes(extra):
    topo = build_topology(
        STAT_XML, -1234, "StatExecutionPlan", "tcp://127.0.0.1:8904", "127.0.0.1", extra=extra
    )
    return {
        c.id: c.class_path
        for c in topo.components.values()
        if c.id in ("EventReceiverSpout", "EventPublisherBolt")
    }, topo


def test_zmq_is_the_default_and_gives_the_zeromq_components():
    assert settings()["topology.transport"] == "zmq"
    assert _transport(settings()) == {}
    found, _ = classes({})
    assert found == {
        "EventReceiverSpout": "receivers.spout:ReceiverSpout",
        "EventPublisherBolt": "publishers.bolt:PublisherBolt",
    }


def test_nats_gives_the_jetstream_components_and_their_server():
    extra = _transport(settings(**{"topology.transport": "nats"}))
    assert extra == {"transport": "nats", "nats_url": "nats://127.0.0.1:4222"}
    named = _transport(
        settings(
            **{
                "topology.transport": "NATS",
                "topology.nats_connection": "bus",
                "connections.brokers": ["bus=nats://10.1.2.3:4222"],
            }
        )
    )
    assert named["nats_url"] == "nats://10.1.2.3:4222"
    found, topo = classes(named)
    assert found == {
        "EventReceiverSpout": "receivers.nats_spout:NatsReceiverSpout",
        "EventPublisherBolt": "publishers.nats_bolt:NatsPublisherBolt",
    }
    assert topo.components["EventReceiverSpout"].config["nats_url"] == "nats://10.1.2.3:4222"


@pytest.mark.parametrize(
    "overrides, reason",
    [
        ({"topology.transport": "kafka"}, "'kafka' is not one of zmq, nats"),
        (
            {"topology.transport": "nats", "topology.nats_connection": "bus"},
            "'bus' is not a configured broker connection",
        ),
        (
            {
                "topology.transport": "nats",
                "topology.nats_connection": "mq",
                "connections.brokers": ["mq=mqtt://127.0.0.1:1883"],
            },
            "needs a nats:// or tls://",
        ),
    ],
)
def test_a_bad_transport_setting_stops_the_start_with_the_reason(overrides, reason):
    with pytest.raises(ConfigError, match="topology.transport: .*" + reason):
        _transport(settings(**overrides))


def test_the_deployment_entry_tells_the_worker():
    entry = {"tenant": -1234, "name": "P", "version": 1, "imported": [], "exported": []}
    assert spec_from_deployment(entry).transport == "zmq"
    spec = spec_from_deployment({**entry, "transport": "nats", "transportConnection": "bus"})
    assert (spec.transport, spec.transport_connection) == ("nats", "bus")


def test_a_nats_plans_status_says_where_its_connections_are():
    from manager.status import plan_status, status_text

    registry = {"connections": [], "publishers": [], "receivers": []}
    zmq = plan_status({"state": "ACTIVE"}, registry, ["S"], 1)
    assert status_text(zmq).endswith("Outflow connections : 0/1 established")
    nats = plan_status({"state": "ACTIVE"}, registry, ["S"], 1, "nats")
    assert nats["transport"] == "nats"
    assert status_text(nats).splitlines() == [
        "Storm topology : ACTIVE",
        "Inflow connections : through NATS JetStream (each worker's /status shows its inflow)",
        "Outflow connections : through NATS JetStream",
    ]
