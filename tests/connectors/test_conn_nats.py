"""@source/@sink(type='nats') against a real nats-server with JetStream: events in through a
durable consumer, out with message ids; a restarted source resumes after its saved stream
sequence; a replayed result is dropped by JetStream's deduplication; a payload that is not an
event is counted and its neighbours go on; the host policy's named connections."""

import asyncio
import json

import nats
import pytest

from cep.policy import HostPolicy
from cep.protocol.frames import Identity
from publishers.exceptions import SinkConfigError, SinkWriteError
from publishers.sinks import build_sink
from receivers.exceptions import SourceConfigError
from receivers.sources import build_source
from tests.connectors.conftest import KEY, wait_for


def run(coro):
    return asyncio.new_event_loop().run_until_complete(coro)


async def _publish(url, subject, payloads, stream=None):
    nc = await nats.connect(url)
    js = nc.jetstream()
    if stream:
        try:
            await js.add_stream(name=stream, subjects=[subject])
        except Exception:  # noqa: BLE001 - exists already
            pass
    for p in payloads:
        await js.publish(subject, p)
    await nc.close()


async def _read_all(url, stream):
    """Every message body of JetStream stream `stream`, in order."""
    nc = await nats.connect(url)
    js = nc.jetstream()
    info = await js.stream_info(stream)
    out = []
    for seq in range(info.state.first_seq, info.state.last_seq + 1):
        msg = await js.get_msg(stream, seq)
        out.append(json.loads(msg.data))
    await nc.close()
    return out


def source(url, tmp_path, router, **options):
    return build_source(
        {"type": "nats", "url": url, **options}, router, KEY, state_dir=str(tmp_path)
    )


def test_events_in_through_a_durable_consumer_bad_payload_counted(
    nats_server, tmp_path, router, taken
):
    subject = "t1.in"
    run(_publish(nats_server.url, subject, [b"x"], stream="T1"))  # stream exists, one bad msg
    payloads = [json.dumps({"timestamp": 1000 + i, "data": [i, 1.5]}).encode() for i in range(500)]
    payloads.insert(250, b'{"not": "closed"')
    run(_publish(nats_server.url, subject, payloads))
    pump = source(
        nats_server.url, tmp_path, router, subject=subject, stream="T1", **{"batch.size": "64"}
    ).start()
    try:
        assert wait_for(lambda: len(taken.ids()) == 500)
        assert taken.ids() == list(range(500))
        assert wait_for(lambda: pump.bad_payloads == 2)
        # the position moves once the last batch is acknowledged, a moment after its events
        assert wait_for(lambda: pump.describe()["position"] == 502), pump.describe()
        d = pump.describe()
        assert d["type"] == "nats" and d["durable"] == "cep_-1234_Brokers_Ticks"
    finally:
        pump.stop()


def test_a_restarted_source_resumes_after_its_saved_sequence(nats_server, tmp_path, router, taken):
    subject = "t2.in"
    run(
        _publish(
            nats_server.url,
            subject,
            [json.dumps({"data": [i, 2.0]}).encode() for i in range(100)],
            stream="T2",
        )
    )
    pump = source(nats_server.url, tmp_path, router, subject=subject, stream="T2").start()
    assert wait_for(lambda: len(taken.ids()) == 100)
    pump.stop()
    # the worker died after the log took the events but before JetStream got the ack: a new
    # durable consumer (no ack floor) redelivers everything; the saved sequence skips it
    run(
        _publish(
            nats_server.url,
            subject,
            [json.dumps({"data": [i, 2.0]}).encode() for i in range(100, 150)],
        )
    )
    again = source(
        nats_server.url, tmp_path, router, subject=subject, stream="T2", durable="fresh"
    ).start()
    try:
        assert wait_for(lambda: len(taken.ids()) == 150)
        assert taken.ids() == list(range(150))
        assert wait_for(lambda: again.source.skipped == 0 or again.source.seq == 150)
    finally:
        again.stop()


def test_messages_sent_toward_a_stopped_sources_pull_request_come_again(
    nats_server, tmp_path, router, taken
):
    # a full batch makes the source ask for the next one ahead; it stops with that request
    # open, and what JetStream sends toward it is delivered again after ack.wait
    subject = "t2b.in"
    run(
        _publish(
            nats_server.url,
            subject,
            [json.dumps({"data": [i, 2.0]}).encode() for i in range(20)],
            stream="T2B",
        )
    )
    options = {"subject": subject, "stream": "T2B", "batch.size": "10", "ack.wait": "1"}
    pump = source(nats_server.url, tmp_path, router, **options).start()
    assert wait_for(lambda: len(taken.ids()) == 20)
    pump.stop()
    run(
        _publish(
            nats_server.url,
            subject,
            [json.dumps({"data": [i, 2.0]}).encode() for i in range(20, 30)],
        )
    )
    again = source(nats_server.url, tmp_path, router, **options).start()
    try:
        assert wait_for(lambda: len(taken.ids()) == 30)
        assert taken.ids() == list(range(30))
    finally:
        again.stop()


def test_unacknowledged_events_stay_at_the_broker_while_the_worker_refuses(
    nats_server, tmp_path, router, taken
):
    subject = "t3.in"
    taken.full = True
    run(
        _publish(
            nats_server.url,
            subject,
            [json.dumps({"data": [i, 3.0]}).encode() for i in range(20)],
            stream="T3",
        )
    )
    pump = source(nats_server.url, tmp_path, router, subject=subject, stream="T3").start()
    try:
        assert wait_for(lambda: pump.source.seq == 0 and pump.accepted == 0, 30.0)
        taken.full = False
        assert wait_for(lambda: len(taken.ids()) == 20)
        assert taken.ids() == list(range(20)) and pump.source.seq == 20
    finally:
        pump.stop()


def test_sink_publishes_and_jetstream_drops_replayed_results(nats_server):
    sink = build_sink(
        {
            "type": "nats",
            "options": {"url": nats_server.url, "subject": "t4.out", "delivery": "exactly-once"},
        },
        "Out",
    )
    try:
        assert sink.delivery == "exactly-once"
        ident = Identity("pub-0", 3, 0, (("lane-a", 0, 2), ("lane-b", 5, 1)))
        events = [(1, [1, 1.0]), (2, [2, 2.0]), (3, [3, 3.0])]
        sink.stage(events, ident)
        sink.stage(events, ident)  # the replay after a restore: the same identities
        sink.stage([(4, [4, 4.0])], Identity("pub-0", 3, 0, (("lane-a", 2, 1),)))
        got = run(_read_all(nats_server.url, sink.js_stream))
        assert [m["data"][0] for m in got] == [1, 2, 3, 4]
        assert got[0] == {"stream": "Out", "timestamp": 1, "data": [1, 1.0]}
        assert sink.duplicates == 3 and sink.written == 4
    finally:
        sink.close()


def test_jetstream_sink_fails_a_batch_no_stream_takes_and_connects_again(nats_server):
    # no stream for the subject and none created: JetStream cannot confirm, the batch fails
    lost = build_sink(
        {
            "type": "nats",
            "options": {
                "url": nats_server.url,
                "subject": "t4.none",
                "create.stream": "false",
                "timeout": "5",
            },
        },
        "Out",
    )
    sink = build_sink(
        {"type": "nats", "options": {"url": nats_server.url, "subject": "t4.again"}}, "Out"
    )
    try:
        with pytest.raises(SinkWriteError, match="refused 2 of 2 messages: no JetStream stream"):
            lost.write_batch([(1, [1, 1.0]), (2, [2, 2.0])])
        assert lost.written == 0
        sink.write_batch([(1, [1, 1.0])])
        sink._sock.close()  # the connection breaks: that batch fails, the next connects again
        with pytest.raises(SinkWriteError):
            sink.write_batch([(2, [2, 2.0])])
        sink.write_batch([(3, [3, 3.0])])
        got = run(_read_all(nats_server.url, sink.js_stream))
        assert [m["data"][0] for m in got] == [1, 3] and sink.written == 2
    finally:
        lost.close()
        sink.close()


def test_core_nats_sink_and_source(nats_server, tmp_path, router, taken):
    pump = source(nats_server.url, tmp_path, router, subject="t5.core", jetstream="false").start()
    sink = build_sink(
        {
            "type": "nats",
            "options": {"url": nats_server.url, "subject": "t5.core", "jetstream": "false"},
        },
        "Ticks",
    )
    try:
        sink.write_batch([(10 + i, [i, 5.0]) for i in range(300)])
        assert wait_for(lambda: len(taken.ids()) == 300)
        assert taken.ids() == list(range(300))
    finally:
        sink.close()
        pump.stop()


def test_policy_needs_a_named_connection_and_keeps_the_secret_out(nats_server, router):
    url = nats_server.url.replace("nats://", "nats://cep:s3cret@")
    policy = HostPolicy(
        brokers={"events": nats_server.url, "secret": url, "plant": "mqtt://127.0.0.1:1883"}
    )
    with pytest.raises(SinkConfigError, match="must name a configured connection"):
        build_sink(
            {"type": "nats", "options": {"url": nats_server.url, "subject": "x"}}, "Out", policy
        )
    with pytest.raises(
        SinkConfigError,
        match=r"'nope' is not a configured broker connection "
        r"\(connections.brokers: events, plant, secret\)",
    ):
        build_sink(
            {"type": "nats", "options": {"connection": "nope", "subject": "x"}}, "Out", policy
        )
    with pytest.raises(SourceConfigError, match="needs a nats or tls:// connection, not mqtt"):
        build_source({"type": "nats", "connection": "plant", "subject": "x"}, router, KEY, policy)
    with pytest.raises(
        SourceConfigError,
        match=r"unknown option 'subjet'; a nats source takes "
        r"type, map, connection, url, .*subject",
    ):
        build_source({"type": "nats", "connection": "events", "subjet": "x"}, router, KEY, policy)
    sink = build_sink(
        {"type": "nats", "options": {"connection": "secret", "subject": "x", "jetstream": "false"}},
        "Out",
        policy,
    )
    try:
        assert "s3cret" not in json.dumps(sink.describe())
    finally:
        sink.close()


def test_a_map_decodes_and_encodes_broker_messages(nats_server, tmp_path, router, taken):
    """@map(type='json', @attributes(...)) on a NATS source reads custom JSON; an @map on a
    NATS sink writes its payload template."""
    from cep.mapping.spec import MapSpec
    from cep.model import Attribute, AttrType, StreamDefinition

    spec = MapSpec("json", {}, (("id", "$.tick.n"), ("price", "$.tick.p")))
    pump = build_source(
        {"type": "nats", "url": nats_server.url, "subject": "t6.map", "jetstream": "false"},
        router,
        KEY,
        mapping=spec,
        state_dir=str(tmp_path),
    ).start()
    definition = StreamDefinition(
        "Ticks", (Attribute("id", AttrType.LONG), Attribute("price", AttrType.DOUBLE))
    )
    out = build_sink(
        {
            "type": "nats",
            "options": {"url": nats_server.url, "subject": "t6.map", "jetstream": "false"},
            "map": MapSpec(
                "json", {}, (), ((None, '{"tick": {"n": {{id}}, "p": {{price}}}}'),)
            ).to_dict(),
            "definition": definition,
        },
        "Ticks",
    )
    try:
        out.write_batch([(1, [7, 1.5]), (2, [8, 2.5])])
        assert wait_for(lambda: taken.ids() == [7, 8])
        assert [row[1] for _, row in taken.events] == [1.5, 2.5]
    finally:
        out.close()
        pump.stop()
