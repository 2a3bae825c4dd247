"""Core NATS on a plain socket (connectors/nats_wire.py): MSG frames cut out of reads split
anywhere, control lines kept apart; against the real nats-server, the socket sink's
messages reach a nats-py subscriber and a nats-py publisher's reach the socket source, and a
sink whose connection broke connects again for the next batch."""

import asyncio

import nats
import pytest

from connectors.mapping import encode_events
from connectors.nats_wire import (
    parse_messages,
    parse_replies,
    publish_frames,
    request_frames,
    stream_sequence,
)
from publishers.exceptions import SinkWriteError
from publishers.sinks import build_sink
from receivers.sources import build_source
from tests.connectors.conftest import KEY, wait_for


def test_frames_are_cut_out_of_reads_split_at_any_byte():
    payloads = [b"", b"a\r\nb", b"x" * 3000]
    data = (
        b"INFO {}\r\n"
        + publish_frames("s.t", payloads).replace(b"PUB s.t ", b"MSG s.t 1 ")
        + b"PING\r\n"
    )
    for cut in range(0, len(data) + 1, 5):
        out, control = [], []
        buf = bytearray(data[:cut])
        del buf[: parse_messages(buf, out, control)]
        buf += data[cut:]
        assert parse_messages(buf, out, control) == len(buf)
        assert [(t, p) for t, run in out for p in run] == [(b"s.t", p) for p in payloads]
        assert control == [b"INFO {}", b"PING"]
    # consecutive frames of one subject are one run
    out = []
    frames = (
        (
            publish_frames("s.t", [b"1", b"2"])
            + publish_frames("s.tt", [b"3"])
            + publish_frames("s.t", [b"4"])
        )
        .replace(b"PUB ", b"MSG ")
        .replace(b"s.t ", b"s.t 1 ")
    )
    parse_messages(bytearray(frames.replace(b"s.tt ", b"s.tt 1 ")), out)
    assert out == [(b"s.t", [b"1", b"2"]), (b"s.tt", [b"3"]), (b"s.t", [b"4"])]


def test_requests_carry_reply_subjects_and_ids_and_replies_are_cut_out_anywhere():
    frames = request_frames("a.b", [b"x", b"yy"], "_INBOX.q", 5, ["id-1", "id-2"])
    assert frames.startswith(
        b"HPUB a.b _INBOX.q.5 31 32\r\nNATS/1.0\r\nNats-Msg-Id: id-1\r\n\r\nx\r\n"
    )
    assert request_frames("a.b", [b"x"], "_INBOX.q", 0) == b"PUB a.b _INBOX.q.0 1\r\nx\r\n"
    with pytest.raises(ValueError, match="line break"):
        request_frames("a.b", [b"x"], "_INBOX.q", 0, ["a\r\nb"])
    ack, status = b'{"stream":"S","seq":1}', b"NATS/1.0 503\r\n\r\n"
    data = b"MSG _INBOX.q.5 1 %d\r\n%s\r\nHMSG _INBOX.q.6 1 %d %d\r\n%s\r\nPING\r\n" % (
        len(ack),
        ack,
        len(status),
        len(status),
        status,
    )
    for cut in range(len(data) + 1):
        out, control = [], []
        buf = bytearray(data[:cut])
        del buf[: parse_replies(buf, out, control)]
        buf += data[cut:]
        assert parse_replies(buf, out, control) == len(buf)
        assert out == [(b"_INBOX.q.5", b"", b"", ack), (b"_INBOX.q.6", b"", b"503", b"")]
        assert control == [b"PING"]
    # a JetStream message with its acknowledgement subject, sent with a message id header
    ack_to, hdr = b"$JS.ACK.S.d.1.42.7.1700000000000000000.0", b"NATS/1.0\r\nNats-Msg-Id: x\r\n\r\n"
    frame = b"HMSG s.t 1 %s %d %d\r\n%sev\r\n" % (ack_to, len(hdr), len(hdr) + 2, hdr)
    out = []
    assert parse_replies(bytearray(frame), out) == len(frame)
    assert out == [(b"s.t", ack_to, b"", b"ev")] and stream_sequence(ack_to) == 42
    assert stream_sequence(b"$JS.ACK.dom.acc.S.d.1.43.7.1700000000000000000.0.tok") == 43


def test_socket_sink_and_source_talk_with_nats_py(nats_server, router, taken):
    async def collect(n):
        nc = await nats.connect(nats_server.url)
        got, done = [], asyncio.Event()

        async def take(msg):
            got.append(msg.data)
            if len(got) == n:
                done.set()

        await nc.subscribe("wire.out", cb=take)
        await nc.flush()
        return nc, got, done

    loop = asyncio.new_event_loop()
    nc, got, done = loop.run_until_complete(collect(250))
    out = build_sink(
        {
            "type": "nats",
            "options": {"url": nats_server.url, "subject": "wire.out", "jetstream": "false"},
        },
        "Ticks",
    )
    pump = build_source(
        {"type": "nats", "url": nats_server.url, "subject": "wire.in", "jetstream": "false"},
        router,
        KEY,
    ).start()
    try:
        events = [(1000 + i, [i, 0.5]) for i in range(250)]
        out.write_batch(events)
        loop.run_until_complete(asyncio.wait_for(done.wait(), 30))
        assert got == encode_events("Ticks", events)

        async def send():
            for i in range(120):
                await nc.publish("wire.in", f'{{"timestamp": {i}, "data": [{i}, 1.0]}}'.encode())
            await nc.publish("wire.in", b"{not json")
            await nc.flush()

        loop.run_until_complete(send())
        assert wait_for(lambda: len(taken.ids()) == 120)
        assert taken.ids() == list(range(120))
        assert wait_for(lambda: pump.describe()["bad_payloads"] == 1)

        out._sock.close()  # the connection breaks: that batch is an error, the next connects
        with pytest.raises(SinkWriteError):
            out.write_batch(events[:1])
        out.write_batch(events[1:2])
        assert out._sock is not None
    finally:
        out.close()
        pump.stop()
        loop.run_until_complete(nc.close())
        loop.close()
