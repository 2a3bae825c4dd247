"""The QoS 0 MQTT wire code (connectors/mqtt_wire.py) and the batch decode of broker sources
(connectors/mapping.py): PUBLISH packets cut out of reads split anywhere, payload sizes that
need 1 to 3 length bytes; against the real mosquitto broker, the socket sink's messages reach
a paho subscriber and a paho publisher's reach the socket source; a batch of the common JSON
shape becomes [ts, row] pairs, any other batch JSON events with the bad messages named."""

import collections
import time

import paho.mqtt.client as mqtt

from connectors.mapping import encode_events, json_batch_decoder
from connectors.mqtt_wire import PUBLISH, parse_publishes, publish_packets, remaining_length
from connectors.wire_reader import take, topic_of
from publishers.sinks import build_sink
from receivers.sources import build_source
from tests.connectors.conftest import KEY, wait_for


def test_packets_are_cut_out_of_reads_split_at_any_byte():
    payloads = [b"", b"x" * 100, b"y" * 200, b"z" * 20000]
    assert [len(remaining_length(n)) for n in (0, 127, 128, 16383, 16384)] == [1, 1, 2, 2, 3]
    data = publish_packets("a/b", payloads) + bytes([0xD0, 0])  # and a PINGRESP
    for cut in range(0, len(data) + 1, 7):
        out, others = [], []
        buf = bytearray(data[:cut])
        used = parse_publishes(buf, out, others)
        del buf[:used]
        buf += data[cut:]
        used = parse_publishes(buf, out, others)
        assert used == len(buf)
        assert [(t, p) for t, run in out for p in run] == [(b"a/b", p) for p in payloads]
        assert others == [(13, b"")]
    # consecutive packets of one topic are one run
    out = []
    parse_publishes(
        bytearray(
            publish_packets("a/b", [b"1", b"2"])
            + publish_packets("a/bc", [b"3"])
            + publish_packets("a/b", [b"4"])
        ),
        out,
    )
    assert out == [(b"a/b", [b"1", b"2"]), (b"a/bc", [b"3"]), (b"a/b", [b"4"])]
    retained = publish_packets("t", [b"v"], retain=True)
    assert retained[0] == (PUBLISH << 4) | 1


def test_a_fetch_takes_up_to_its_batch_size_across_runs_and_names_each_topic():
    queue = collections.deque([(b"a", [b"1", b"2", b"3"]), (b"b", [b"4", b"5"]), (b"c", [b"6"])])
    payloads, runs = take(queue, 4)
    assert payloads == [b"1", b"2", b"3", b"4"] and runs == [(b"a", 3), (b"b", 1)]
    assert [topic_of(runs, i) for i in range(4)] == [b"a", b"a", b"a", b"b"]
    assert list(queue) == [(b"b", [b"5"]), (b"c", [b"6"])]  # the rest of a cut run stays first
    assert take(queue, 10) == ([b"5", b"6"], [(b"b", 1), (b"c", 1)])
    assert take(queue, 10) == ([], []) and not queue


def test_the_socket_sink_and_source_talk_with_paho_through_mosquitto(mosquitto, router, taken):
    got = []
    reader = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="wire-reader")
    reader.on_message = lambda c, u, msg: got.append(msg.payload)
    reader.on_connect = lambda c, u, f, r, p: c.subscribe("wire/out", qos=0)
    reader.connect("127.0.0.1", mosquitto.port)
    reader.loop_start()
    pump = build_source(
        {"type": "mqtt", "url": mosquitto.url, "topic": "wire/in", "qos": "0"}, router, KEY
    )
    pump.start()
    out = build_sink(
        {"type": "mqtt", "options": {"url": mosquitto.url, "topic": "wire/out", "qos": "0"}},
        "Ticks",
    )
    writer = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="wire-writer")
    writer.connect("127.0.0.1", mosquitto.port)
    writer.loop_start()
    try:
        time.sleep(0.5)  # the paho reader's subscription is in place
        out.write_batch([(1000 + i, [i, 0.5]) for i in range(300)])
        assert wait_for(lambda: len(got) == 300)
        assert got == encode_events("Ticks", [(1000 + i, [i, 0.5]) for i in range(300)])
        for i in range(200):
            writer.publish("wire/in", f'{{"timestamp": {i}, "data": [{i}, 1.0]}}', qos=0)
        writer.publish("wire/in", b"not json", qos=0)
        assert wait_for(lambda: len(taken.ids()) == 200)
        assert taken.ids() == list(range(200))
        assert wait_for(lambda: pump.describe()["bad_payloads"] == 1)
    finally:
        out.close()
        pump.stop()
        for c in (reader, writer):
            c.disconnect()
            c.loop_stop()


def test_a_batch_of_the_common_shape_is_pairs_and_others_are_events():
    decode = json_batch_decoder("Ticks")
    events, pairs, bad = decode(
        [
            b'{"timestamp": 1, "data": [1, 1.0]}',
            b'[{"timestamp": 2, "data": [2, 2.0], "stream": "Ticks"}]',
        ]
    )
    assert (events, pairs, bad) == ([[1, [1, 1.0]], [2, [2, 2.0]]], True, [])
    events, pairs, bad = decode(
        [
            b'{"timestamp": 1, "data": [1, 1.0]}',
            b"{broken",
            b'{"data": {"id": 3, "price": 3.0}}',
            b"null",
        ]
    )
    assert not pairs and events == [
        {"timestamp": 1, "data": [1, 1.0]},
        {"data": {"id": 3, "price": 3.0}},
    ]
    assert [i for i, _ in bad] == [1, 3]
    events, pairs, _ = decode([b'{"timestamp": 1, "data": [1], "stream": "Other"}'])
    assert not pairs and events == [{"timestamp": 1, "data": [1], "stream": "Other"}]
    events, pairs, _ = decode([b'{"timestamp": 1, "data": [1], "extra": 2}'])
    assert not pairs and events == [{"timestamp": 1, "data": [1], "extra": 2}]
    events, pairs, bad = decode([b"[" * 40 + b"]" * 40])
    assert not events and bad and "deeper" in bad[0][1]
