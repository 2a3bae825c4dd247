"""A manager on the NATS JetStream transport with a real nats-server that wants a user and a
password (no Spark: a fake launcher records the topologies it would submit):

- the topology spec names the connection only: neither the password nor the URL is in it;
  the URL comes with the launch options (LinkSecurity.brokers), and a receiver spout built
  from that spec and those options reads what a worker's inflow published;
- the plan status shows the inflow and outflow streams: spout consumers reading, messages
  pending, published and acknowledged; the manager's /metrics has them as series;
- editing the plan (its topology is submitted again) keeps the streams and their unread
  input; removing it deletes both streams and their durable consumers."""

import time

import nats
import nats.js.errors
import pytest

from cep.policy.exceptions import PolicyViolation
from cep.security import curve
from cep.worker.nats_inflow import NatsInflow
from connectors.aio import LoopThread
from connectors.nats_transport import inflow_stream, outflow_stream
from manager.deployment_view import flows
from manager.prometheus import ManagerCollector
from manager.server import Manager
from manager.settings import load_manager_settings
from manager.testing import FakeLauncher
from publishers.base import Sink
from publishers.nats_bolt import NatsPublisherBolt
from publishers.nats_service import NatsPublisherService
from publishers.sink_set import SinkSet
from receivers.nats_spout import NatsReceiverSpout
from tests.connectors.servers import start_nats
from tests.manager.manager_plans import STAT_PLAN
from topology.component import Batch, Collector, Context

T, P = -1234, "StatExecutionPlan"
PASSWORD = "s3cret-pw"
IN, OUT = "analyticsStats", "processedStream"


@pytest.fixture()
def server(tmp_path_factory):  # one per test: each starts without streams
    srv = start_nats(tmp_path_factory.mktemp("nats-auth"), user="cep", password=PASSWORD)
    yield srv
    srv.stop()


@pytest.fixture()
def manager(tmp_path, server):
    settings = load_manager_settings(
        overrides={
            "manager.data_dir": str(tmp_path),
            "registry.port": 0,
            "registry.bind_host": "127.0.0.1",
            "manager.advertised_host": "127.0.0.1",
            "topology.transport": "nats",
            "topology.nats_connection": "bus",
            "connections.brokers": [f"bus={server.url}"],
        },
        env={},
    )
    m = Manager(settings, launcher=FakeLauncher()).start()
    yield m
    m.stop()


def wait(cond, what, timeout=20):
    deadline = time.monotonic() + timeout
    while not (value := cond()):
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.05)
    return value


def component(topology, cid):
    return next(c for c in topology.components.values() if c.id == cid)


def start_spout(topology, security, max_frames=64):
    """The receiver spout of `topology` as a Spark task builds it: its spec's config and the
    launch options' security; it acknowledges what completed checkpoints cover."""
    spec = component(topology, "EventReceiverSpout")
    config = {**spec.config, "tick_ms": 0, "fetch_wait_ms": 50, "max_frames": max_frames}
    s = NatsReceiverSpout(config)
    outputs = {IN: ["_timestamp", "ipAdd", "userID", "searchTerms"], "_tick": ["_timestamp"]}
    collector = Collector("EventReceiverSpout", outputs)
    s.open(
        Context(topology.name, "EventReceiverSpout", 0, 1, 0, outputs, security=security),
        collector,
    )
    s.checkpoint_restored(None)
    return s, collector


def publish_input(url, n):
    inflow = NatsInflow(url, T, P, IN, "w1", batch_size=10).start()
    try:
        wait(lambda: inflow.connected, "the inflow's connection")
        assert inflow.offer([(1_000 + i, ("10.0.0.1", f"u{i}", "q")) for i in range(n)]) == 0
        return inflow.metrics()
    finally:
        inflow.stop()


class Seen(Sink):
    type = "seen"

    def __init__(self):
        super().__init__(OUT, {})
        self.rows = []

    def write_batch(self, events):
        self.rows.extend(row for _, row in events)


def stream_exists(url, name):
    loop = LoopThread("test jetstream")

    async def probe():
        nc = await nats.connect(url)
        try:
            await nc.jetstream().stream_info(name)
            return True
        except nats.js.errors.NotFoundError:
            return False
        finally:
            await nc.close()

    try:
        return loop.run(probe(), 20)
    finally:
        loop.close()


def test_the_spec_names_the_connection_and_the_launch_options_carry_its_secret(manager, server):
    manager.plans.add(T, STAT_PLAN)
    topology = wait(lambda: manager.launcher.submitted, "the topology's submission")[-1]
    text = topology.to_json()
    assert PASSWORD not in text and str(server.port) not in text
    assert component(topology, "EventReceiverSpout").config["nats_connection"] == "bus"
    assert component(topology, "EventPublisherBolt").config["nats_connection"] == "bus"
    options = manager.launcher.security.to_options()  # what launch.json (0600) holds
    assert options["brokers"] == {"bus": server.url}
    security = curve.LinkSecurity.from_options(options)
    published = publish_input(server.url, 25)
    assert published["sent"] == 25
    spout, collector = start_spout(topology, security)
    try:
        rows = []
        for _ in range(200):
            spout.next_batch()
            rows.extend(r for stream, batch, _ in collector.take() if stream == IN for r in batch)
            if len(rows) >= 25:
                break
        assert sorted(r[2] for r in rows) == sorted(f"u{i}" for i in range(25))
    finally:
        spout.close()
    with pytest.raises(PolicyViolation, match="'bus' did not come with the topology's launch"):
        start_spout(topology, curve.LinkSecurity())


def test_status_shows_the_streams_and_removal_deletes_them_but_an_edit_keeps_them(manager, server):
    manager.plans.add(T, STAT_PLAN)
    topology = wait(lambda: manager.launcher.submitted, "the topology's submission")[-1]
    security = curve.LinkSecurity.from_options(manager.launcher.security.to_options())
    before = manager.plans.status(T, P)
    assert before["transport"] == "nats"
    assert before["inflow"]["jetstream"]["exists"] is False
    publish_input(server.url, 40)  # 4 frames of 10 events
    spout, collector = start_spout(topology, security, max_frames=1)
    sink = Seen()
    sinks = SinkSet(f"{T}/{P}")
    sinks.add(OUT, sink)
    service = NatsPublisherService(sinks, server.url, T, P).start()
    bolt = NatsPublisherBolt(
        {
            **component(topology, "EventPublisherBolt").config,
            "retry_interval": 0.1,
        }
    )
    bolt.prepare(
        Context(topology.name, "EventPublisherBolt", 0, 1, 0, {}, security=security),
        Collector("EventPublisherBolt", {}),
    )
    try:
        for _ in range(100):  # the spout reads two frames, one at a time
            spout.next_batch()
            if spout.seq >= 2:
                break
        assert [seq for seq, _ in spout.unacked] == [1, 2]
        spout.checkpoint_complete(1, {"nats": 1})  # a checkpoint covers the first one
        bolt.execute(Batch([(5, "u1", 7)], OUT))
        wait(lambda: sink.rows, "the result at the worker's sink")
        assert sink.rows == [("u1", 7)]
        status = wait(
            lambda: (
                (s := manager.plans.status(T, P))["inflow"]["jetstream"].get("acked")
                and s["outflow"].get("acked") == 2
                and s
            ),
            "the acknowledgements in the plan status",
        )
        inflow = status["inflow"]["jetstream"]
        assert inflow["stream"] == inflow_stream(T, P)
        assert (inflow["published"], inflow["messages"], inflow["consumers"]) == (4, 4, 1)
        assert inflow["acked"] == 1 and inflow["pending"] == 3  # one read unacked, two unread
        assert (inflow["connected"], inflow["required"]) == (1, 2)  # receiverParallelism 2
        outflow = status["outflow"]
        assert outflow["stream"] == outflow_stream(T, P)
        # the bolt's start notice and its frame, both handed to the sinks and acknowledged
        assert (outflow["published"], outflow["consumers"], outflow["pending"]) == (2, 1, 0)
        assert outflow["connected"] == 1
        text = manager.plans.list(T)[0]["statusText"]
        assert (
            f"Inflow connections : NATS JetStream, 1/2 spout consumers reading "
            f"{inflow_stream(T, P)}: 3 pending, 4 published, 1 acknowledged" in text
        )
        assert "Outflow connections : NATS JetStream, 1/1 worker consumers reading" in text
        # the console's deployment status: one flow line per stream
        [flow] = flows(manager.plans, manager.registry.table)
        assert flow["inflow"] == [
            {
                "worker": "NATS JetStream",
                "spout": inflow_stream(T, P),
                "stream": "1/1 consumers reading, 3 pending",
            }
        ]
        assert flow["outflow"][0]["bolt"] == outflow_stream(T, P)
        assert flow["outflow"][0]["worker"] == "1/1 consumers reading, 0 pending"
        series = {
            (fam.name, tuple(sorted(s.labels.items()))): s.value
            for fam in ManagerCollector(manager).collect()
            for s in fam.samples
        }
        labels = (("direction", "in"), ("plan", P), ("tenant", str(T)))
        assert series[("cep_plan_jetstream_pending_messages", labels)] == 3
        assert series[("cep_plan_jetstream_published_messages", labels)] == 4
        assert series[("cep_plan_jetstream_acked_messages", labels)] == 1
        assert series[("cep_plan_jetstream_consumers", labels)] == 1
    finally:
        spout.close()
        bolt.cleanup()
        service.stop()
    # an edit submits the topology again: the streams and the unread input stay
    manager.plans.edit(T, P, STAT_PLAN.replace("!= '192.168.1.1'", "!= '192.168.1.2'"))
    wait(lambda: len(manager.launcher.submitted) == 2, "the edited plan's topology")
    assert stream_exists(server.url, inflow_stream(T, P))
    assert manager.plans.status(T, P)["inflow"]["jetstream"]["messages"] == 4
    # removing the plan deletes both streams and their consumers
    removed = manager.plans.remove(T, P)
    assert removed["jetstream"] == {"deleted": [inflow_stream(T, P), outflow_stream(T, P)]}
    assert not stream_exists(server.url, inflow_stream(T, P))
    assert not stream_exists(server.url, outflow_stream(T, P))


def test_a_removal_while_the_server_is_down_still_removes_the_plan(tmp_path):
    settings = load_manager_settings(
        overrides={
            "manager.data_dir": str(tmp_path),
            "registry.port": 0,
            "registry.bind_host": "127.0.0.1",
            "manager.advertised_host": "127.0.0.1",
            "topology.transport": "nats",
            "topology.nats_connection": "bus",
            "connections.brokers": ["bus=nats://127.0.0.1:1"],
        },
        env={},
    )
    m = Manager(settings, launcher=FakeLauncher()).start()
    try:
        m.plans.add(T, STAT_PLAN)
        status = m.plans.status(T, P)
        assert "not reachable" in status["inflow"]["jetstream"]["error"]
        removed = m.plans.remove(T, P)
        assert removed["removed"] is True and removed["jetstream"]["deleted"] == []
        assert "not reachable" in removed["jetstream"]["error"]
        assert not m.plans.exists(T, P)
    finally:
        m.stop()
