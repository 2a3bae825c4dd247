"""The plan topology's components without Spark: the Siddhi bolt on a group of the sample plan,
the receiver spout and the publisher bolt against a real registry and real ZeroMQ sockets."""

import time

import pytest
import zmq

from cep.bolt import SiddhiBolt, group_plan_text
from cep.protocol.registry_client import RegistryClient
from manager.registry.service import RegistryService
from cep.protocol.frames import decode_output, encode_batch
from manager.topology_builder import build_topology
from publishers.bolt import PublisherBolt
from receivers.spout import ReceiverSpout
from tests.manager.manager_helpers import poll
from topology.component import Batch, Collector, Context

T, P = -1234, "StockAnalysis"


def sample_topology(registry="tcp://127.0.0.1:1"):
    import cep
    from manager.queryplan import query_plan_xml

    plan = cep.compile(open("conf/samples/StockAnalysis.siddhiql").read())
    return build_topology(query_plan_xml(plan), T, P, registry, "127.0.0.1")


def start(component, topo, cid, index=0):
    spec = topo.components[cid]
    ctx = Context(topo.name, cid, index, spec.parallelism, 0, spec.outputs)
    collector = Collector(cid, spec.outputs)
    (component.open if spec.kind == "spout" else component.prepare)(ctx, collector)
    return collector


def test_siddhi_bolt_runs_its_group():
    topo = sample_topology()
    spec = topo.components["filter"]
    assert (
        "define stream StockStream ( symbol string, price double, volume long );"
        in group_plan_text(spec.config)
    )
    bolt = SiddhiBolt(spec.config)
    collector = start(bolt, topo, "filter")
    bolt.execute(
        Batch(
            [(1000, "IBM", 600.0, 10), (1001, "WSO2", 20.0, 5), (1002, "X", 501.5, 1)],
            "StockStream",
            "EventReceiverSpout",
        )
    )
    assert collector.take() == [
        ("HighPriceStream", [(1000, "IBM", 600.0, 10), (1002, "X", 501.5, 1)], None)
    ]
    bolt.cleanup()


@pytest.fixture
def registry():
    svc = RegistryService(port=0, bind_host="127.0.0.1", heartbeat_interval=0.1)
    svc.start()
    yield svc
    svc.stop()


def test_spout_registers_receives_and_unregisters(registry):
    url = f"tcp://127.0.0.1:{registry.port}"
    topo = sample_topology(url)
    spout = ReceiverSpout(
        {**topo.components["EventReceiverSpout"].config, "heartbeat_interval": 0.1, "tick_ms": 0}
    )
    collector = start(spout, topo, "EventReceiverSpout")
    client = RegistryClient(url)
    ep = client.lookup("receiver", T, P, stream="StockStream")
    push = zmq.Context.instance().socket(zmq.PUSH)
    push.setsockopt(zmq.LINGER, 0)
    push.connect(ep["endpoint"])
    try:
        push.send(b"not msgpack")
        push.send(encode_batch("Unknown", [[1, ["a"]]]))
        push.send(encode_batch("StockStream", [[5, ["IBM", 10.0, 3]], [6, ["bad"]]]))
        rows = poll(lambda: spout.next_batch() or collector.take(), 5, 0.02, "spout rows")
        assert [(s, r) for s, r, _ in rows] == [("StockStream", [(5, "IBM", 10.0, 3)])]
        assert spout.dropped == 3
    finally:
        push.close(0)
        spout.close()
    with pytest.raises(Exception, match="no live receiver spout"):
        client.lookup("receiver", T, P, stream="StockStream")
    client.close()


def next_batch(pull):
    """The next data frame's (stream, events), past the bolt's start/commit notices; each
    frame acknowledged, as a worker's publisher service does."""
    while True:
        assert pull.poll(3000)
        peer, number, frame = pull.recv_multipart()
        pull.send_multipart([peer, number])
        stream, events, _ = decode_output(frame)
        if stream is not None:
            return stream, events


def test_publisher_bolt_sends_and_releases(registry):
    url = f"tcp://127.0.0.1:{registry.port}"
    topo = sample_topology(url)
    pull = zmq.Context.instance().socket(zmq.ROUTER)  # a worker's publisher port (next_batch)
    pull.setsockopt(zmq.LINGER, 0)
    port = pull.bind_to_random_port("tcp://127.0.0.1")
    client = RegistryClient(url)
    bolt = PublisherBolt({**topo.components["EventPublisherBolt"].config, "retry_interval": 0.05})
    try:
        start(bolt, topo, "EventPublisherBolt")  # no worker publisher yet: buffers
        bolt.execute(Batch([(1, "IBM", 600.0, 10)], "HighPriceStream"))
        assert bolt.sock is None and bolt.pending_events == 1
        client.register("publisher", T, P, "127.0.0.1", port, worker="w1")
        # the buffered batch is flushed once the connector finds the worker, without new input
        assert next_batch(pull) == ("HighPriceStream", ((1, ("IBM", 600.0, 10)),))
        bolt.execute(Batch([(2, "IBM", 12.5, 4)], "AvgPriceStream"))
        assert next_batch(pull) == ("AvgPriceStream", ((2, ("IBM", 12.5, 4)),))
        assert [c["client"] for c in client.status(T, P)["connections"]] == [
            "StockAnalysis[-1234]:EventPublisherBolt:0"
        ]
    finally:
        bolt.cleanup()
        pull.close(0)
    assert client.status(T, P)["connections"] == []  # released on close
    client.close()


def test_every_group_of_the_three_group_plan_runs_as_a_bolt():
    """Each event-processor's text (table, partition, pruned inner stream) compiles and runs."""
    from tests.manager.manager_plans import STAT_XML

    topo = build_topology(STAT_XML, T, "StatExecutionPlan", "tcp://127.0.0.1:1", "127.0.0.1")
    outputs = {}
    for cid, rows, stream in (
        ("1", [(1, "10.0.0.1", "u1", "a"), (2, "192.168.1.1", "u2", "b")], "analyticsStats"),
        ("2", [(3, "u1", "a"), (4, "u1", "b")], "validAnalyticsStat"),
        ("query4", [(5, "u1", 6), (6, "u2", 2)], "processedAnalyticsStats"),
    ):
        bolt = SiddhiBolt(topo.components[cid].config)
        collector = start(bolt, topo, cid)
        bolt.execute(Batch(rows, stream))
        outputs[cid] = collector.take()
        bolt.cleanup()
    assert outputs["1"] == [("validAnalyticsStat", [(1, "u1", "a")], None)]
    assert outputs["2"] == [("processedAnalyticsStats", [(3, "u1", 1), (4, "u1", 2)], None)]
    assert outputs["query4"] == [("processedStream", [(5, "u1", 6)], None)]


def test_timer_output_of_a_siddhi_bolt_leaves_on_the_spouts_tick():
    import cep
    from manager.queryplan import query_plan_xml

    text = """@Plan:name('Ticks')
@Import('S:1.0.0') define stream S (a int);
@Export('O:1.0.0') define stream O (c long);
from S#window.timeBatch(100 milliseconds) select count() as c insert into O;"""
    topo = build_topology(
        query_plan_xml(cep.compile(text)),
        T,
        "Ticks",
        "tcp://127.0.0.1:1",
        "127.0.0.1",
        extra={"tick_ms": 50},
    )
    (group,) = [c for c in topo.bolts if c.id != "EventPublisherBolt"]
    bolt = SiddhiBolt(group.config)
    collector = start(bolt, topo, group.id)
    now = int(time.time() * 1000)
    bolt.execute(Batch([(now, 1), (now, 2)], "S"))
    assert collector.take() == []
    time.sleep(0.3)  # the window's timer fires with no further input
    bolt.execute(Batch([(now + 300,)], "_tick"))
    assert [(s, [r[1:] for r in rows]) for s, rows, _ in collector.take()] == [("O", [(2,)])]
    bolt.cleanup()


def test_spout_emits_ticks_when_wired(registry):
    topo = sample_topology(f"tcp://127.0.0.1:{registry.port}")
    spout = ReceiverSpout({**topo.components["EventReceiverSpout"].config, "tick_ms": 20})
    collector = start(spout, topo, "EventReceiverSpout")
    try:
        ticks = poll(lambda: spout.next_batch() or collector.take(), 3, 0.03, "a tick")
        assert [s for s, *_ in ticks] == ["_tick"] and len(ticks[0][1][0]) == 1
    finally:
        spout.close()
