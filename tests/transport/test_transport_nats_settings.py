"""topology.transport: the manager's settings choose the topology's spout and publisher bolt
and tell the workers; a NATS server comes from a named connection (loopback by default),
an unknown transport or connection stops the manager's start with the reason."""

import pytest

from cep.policy.exceptions import PolicyViolation
from cep.security import curve
from connectors.nats_transport import component_url
from cep.worker.plans import spec_from_deployment
from manager.exceptions import ConfigError
from manager.server import _transport, _transport_brokers
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


def test_nats_gives_the_jetstream_components_and_the_name_of_their_server():
    extra = _transport(settings(**{"topology.transport": "nats"}))
    assert extra == {"transport": "nats", "nats_connection": ""}
    assert component_url(extra) == "nats://127.0.0.1:4222"  # none named: loopback
    secret_url = "nats://cep:s3cret@10.1.2.3:4222"
    s = settings(
        **{
            "topology.transport": "NATS",
            "topology.nats_connection": "bus",
            "connections.brokers": [f"bus={secret_url}", "other=nats://x:y@10.9.9.9:4222"],
        }
    )
    named = _transport(s)
    assert named == {"transport": "nats", "nats_connection": "bus"}
    found, topo = classes(named)
    assert found == {
        "EventReceiverSpout": "receivers.nats_spout:NatsReceiverSpout",
        "EventPublisherBolt": "publishers.nats_bolt:NatsPublisherBolt",
    }
    # the spec names the connection; its URL and password are not in it
    assert topo.components["EventReceiverSpout"].config["nats_connection"] == "bus"
    assert "s3cret" not in topo.to_json() and "10.1.2.3" not in topo.to_json()
    # the URL travels with the launch options, only the transport's connection
    links = curve.LinkSecurity.from_options(
        curve.LinkSecurity(None, None, _transport_brokers(s)).to_options()
    )
    assert links.brokers == (("bus", secret_url),)
    assert component_url(named, links) == secret_url
    with pytest.raises(PolicyViolation, match="'bus' did not come with the topology's launch"):
        component_url(named, curve.LinkSecurity())


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


def test_a_nats_plans_status_says_what_its_streams_hold():
    from manager.status import nats_plan_status, plan_status, status_text

    registry = {"connections": [], "publishers": [], "receivers": []}
    zmq = plan_status({"state": "ACTIVE"}, registry, ["S"], 1)
    assert status_text(zmq).endswith("Outflow connections : 0/1 established")
    flow = {"exists": True, "messages": 9, "published": 12, "consumers": 2, "reading": 1}
    report = {
        "inflow": {**flow, "stream": "CEP_IN_-1234_P", "pending": 4, "acked": 8},
        "outflow": {**flow, "stream": "CEP_OUT_-1234_P", "pending": 0, "acked": 12},
    }
    nats = nats_plan_status({"state": "ACTIVE"}, report, 2)
    assert nats["transport"] == "nats"
    assert nats["inflow"]["jetstream"]["connected"] == 1
    assert status_text(nats).splitlines() == [
        "Storm topology : ACTIVE",
        "Inflow connections : NATS JetStream, 1/2 spout consumers reading CEP_IN_-1234_P: "
        "4 pending, 12 published, 8 acknowledged, 2 consumer(s)",
        "Outflow connections : NATS JetStream, 1/1 worker consumers reading CEP_OUT_-1234_P: "
        "0 pending, 12 published, 12 acknowledged, 2 consumer(s)",
    ]
    down = nats_plan_status({"state": "ACTIVE"}, {"error": "NATS server x not reachable"}, 2)
    assert status_text(down).splitlines()[1] == (
        "Inflow connections : NATS JetStream, unknown (NATS server x not reachable)"
    )
