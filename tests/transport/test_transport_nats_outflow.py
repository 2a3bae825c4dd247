"""The outflow of the NATS JetStream transport on a real nats-server: the NATS publisher bolt
publishes its output frames (start notice first) with message ids made of their identity,
the worker's NATS publisher service hands them to the plan's sinks in order; a frame published
again by the same stage attempt is stored once, a later attempt's replay goes through and the
sink set counts it as a duplicate; frames written while no worker read are delivered later;
workers reading the same plan's outflow split its frames between them (none is copied)."""

import time

import nats
import pytest

from cep.protocol.frames import encode_control, encode_output
from connectors.aio import LoopThread
from connectors.nats_transport import consumer_name, outflow_stream
from publishers.base import Sink
from publishers.nats_bolt import NatsPublisherBolt, output_msg_id
from publishers.nats_service import NatsPublisherService
from publishers.sink_set import SinkSet
from topology.component import Batch, Collector, Context

T, S = -1234, "Out"


class Seen(Sink):
    type = "seen"

    def __init__(self):
        super().__init__(S, {})
        self.seqs = []

    def write_batch(self, events):
        self.seqs.extend(row[0] for _, row in events)


def service(url, plan, sink, **kw):
    sset = SinkSet(f"{T}/{plan}")
    sset.add(S, sink)
    return NatsPublisherService(sset, url, T, plan, **kw).start()


def new_bolt(url, plan, generation=0, attempt=0):
    bolt = NatsPublisherBolt(
        {
            "registry": "tcp://127.0.0.1:1",
            "tenant": T,
            "plan": plan,
            "streams": {S: ["seq"]},
            "host": "127.0.0.1",
            "retry_interval": 0.1,
            "nats_url": url,
        }
    )
    bolt.prepare(
        Context(
            f"{plan}[{T}]",
            "EventPublisherBolt",
            0,
            1,
            0,
            {},
            generation=generation,
            attempt=attempt,
        ),
        Collector("p", {}),
    )
    return bolt


def wait(cond, what, timeout=20):
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.02)


def test_message_ids_come_from_the_identity_and_the_fence():
    one = encode_output(S, [(1, (2,))], "P[-1]:out:0", 3, 40, fence=(7, 1))
    lanes = encode_output(S, [(1, (2,))], "P[-1]:out:0", 3, 40, [("~s:0", 5, 1)], (7, 1))
    assert output_msg_id(one) == output_msg_id(lanes) == "P[-1]:out:0:7.1:Out:3:40"
    assert (
        output_msg_id(encode_output(S, [(1, (2,))], "P[-1]:out:0", 3, 40, fence=(7, 2)))
        == "P[-1]:out:0:7.2:Out:3:40"
    )
    assert output_msg_id(encode_output(S, [], "b", -1, 0)) == "b:-:Out:-1:0"
    assert output_msg_id(encode_control("start", "b", None, (7, 1))) is None


def test_bolt_output_reaches_the_sinks_in_order_and_a_later_reader_gets_what_waited(nats_server):
    plan = "NatsOut"
    bolt = new_bolt(nats_server.url, plan)
    try:
        for k in range(10):
            bolt.execute(Batch([(i, i) for i in range(k * 100, k * 100 + 100)], S))
        wait(lambda: bolt.sent == 1000, "the bolt's frames confirmed")  # no reader yet
        sink = Seen()
        svc = service(nats_server.url, plan, sink)
        try:
            wait(lambda: len(sink.seqs) == 1000, "1000 events at the sink")
            assert sink.seqs == list(range(1000))
            m = svc.metrics()
            assert m["events"] == 1000 and m["controls"] == 1 and m["transport"] == "nats"
        finally:
            svc.stop()
    finally:
        bolt.cleanup()


def test_a_republished_frame_is_stored_once_and_a_replay_is_counted(nats_server):
    plan = "NatsDup"
    sink = Seen()
    svc = service(nats_server.url, plan, sink)
    first = new_bolt(nats_server.url, plan, generation=5, attempt=1)
    try:
        first.checkpoint_restored(None)
        first.execute(Batch([(i, i) for i in range(50)], S))
        wait(lambda: len(sink.seqs) == 50, "the first 50 events")
        frame = encode_output(
            S, [(i, (i,)) for i in range(50)], first.client_id, 0, 0, fence=(5, 1)
        )
        with first._cond:  # the same frame again, as after a lost confirmation
            first.pending.append((frame, 50))
            first.pending_events += 50
            first._cond.notify_all()
        wait(lambda: first.duplicates == 1, "JetStream's duplicate answer")
        # a later stage attempt restarting from a fresh state replays the same results
        second = new_bolt(nats_server.url, plan, generation=5, attempt=2)
        try:
            second.checkpoint_restored(None, restarted=True)
            second.execute(Batch([(i, i) for i in range(50)], S))
            wait(lambda: svc.metrics()["frames"] == 2, "the replayed frame at the worker")
            time.sleep(0.3)
            assert sink.seqs == list(range(50))  # the replay is a duplicate, not written
            assert svc.metrics()["duplicates"] == 50
        finally:
            second.cleanup()
    finally:
        first.cleanup()
        svc.stop()


def test_workers_sharing_a_plans_outflow_split_the_results_between_them(nats_server):
    plan = "NatsShared"
    sinks = [Seen(), Seen()]
    services = [service(nats_server.url, plan, sink) for sink in sinks]
    bolt = new_bolt(nats_server.url, plan)
    try:
        wait(lambda: all(s.connected for s in services), "both workers reading")
        for k in range(40):  # 40 frames of 10, one at a time: each goes to one reader
            bolt.execute(Batch([(i, i) for i in range(k * 10, k * 10 + 10)], S))
            wait(lambda: bolt.sent == (k + 1) * 10, f"frame {k} confirmed")
            time.sleep(0.01)
        wait(lambda: len(sinks[0].seqs) + len(sinks[1].seqs) >= 400, "400 events at the sinks")
        time.sleep(0.3)  # a copy would arrive now
        first, second = set(sinks[0].seqs), set(sinks[1].seqs)
        assert first and second, "each worker wrote a share"
        assert not first & second, "no result written by both"
        assert sorted(sinks[0].seqs + sinks[1].seqs) == list(range(400))
        metrics = [s.metrics() for s in services]
        assert sum(m["events"] for m in metrics) == 400
        assert [m["acked"] for m in metrics] == [len(sinks[0].seqs), len(sinks[1].seqs)]
        assert sum(m["duplicates"] for m in metrics) == 0  # the other's share is no replay
    finally:
        bolt.cleanup()
        for s in services:
            s.stop()


def test_a_frame_a_dead_worker_fetched_goes_to_another_worker_not_acknowledged_away(
    nats_server,
):
    plan = "NatsDeadReader"
    sink = Seen()
    first = service(nats_server.url, plan, sink, ack_wait=1.0)  # makes the durable consumer
    wait(lambda: first.connected, "the consumer made")
    first.stop()
    one = new_bolt(nats_server.url, plan)
    one.execute(Batch([(i, i) for i in range(10)], S))
    wait(lambda: one.sent == 10, "the first bolt's frame confirmed")
    loop = LoopThread("dead reader")

    async def fetch_and_die():  # a worker that fetched the frames and died unacknowledged
        nc = await nats.connect(nats_server.url)
        sub = await nc.jetstream().pull_subscribe_bind(
            consumer_name("cep_out", T, plan), outflow_stream(T, plan)
        )
        msgs = await sub.fetch(2, timeout=5)
        await nc.close()
        return len(msgs)

    two = new_bolt(nats_server.url, plan, generation=1)
    two.client_id = "other-bolt"  # a second publisher bolt instance
    try:
        assert loop.run(fetch_and_die(), 30) == 2  # the start notice and the frame
        svc = service(nats_server.url, plan, sink)
        try:
            two.execute(Batch([(i, i) for i in range(100, 110)], S))
            # the living worker acknowledges the second bolt's frame; the dead reader's two
            # messages come to it once their acknowledgement wait passed
            wait(
                lambda: sorted(sink.seqs) == list(range(10)) + list(range(100, 110)),
                "both",
                timeout=60,
            )
            # the acknowledgement follows the sinks' write: counted a moment later
            wait(lambda: svc.metrics()["acked"] >= 20, "every frame acknowledged", timeout=60)
            assert svc.metrics()["acked"] == 20  # and not more (the dead reader's acked none)
        finally:
            svc.stop()
    finally:
        loop.close()
        one.cleanup()
        two.cleanup()
