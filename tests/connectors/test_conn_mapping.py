"""The connectors' payload mapping: every JSON form in, the sinks' event shape out (NaN as
null), arrays of events with batch.events, the validator's fast path only for the common
shape, and bad payloads with their reasons."""

import json
import math

import pytest

from connectors.mapping import decode_payload, encode_event, encode_events, to_pairs
from connectors.pump import BrokerPump, Fetched
from tests.connectors.conftest import KEY, wait_for


def test_every_json_form_decodes():
    assert decode_payload(b'{"timestamp": 5, "data": [1, 2.0]}') == (
        [{"timestamp": 5, "data": [1, 2.0]}],
        [],
    )
    assert decode_payload(b'[[1, 2.0], {"id": 2, "price": 3.0}]')[0] == [
        [1, 2.0],
        {"id": 2, "price": 3.0},
    ]
    events, bad = decode_payload(b'{"data": [1, 1.0]}\nnot json\n{"data": [2, 2.0]}\n')
    assert events == [{"data": [1, 1.0]}, {"data": [2, 2.0]}]
    assert len(bad) == 1 and "line 2 is not JSON" in bad[0]
    with pytest.raises(ValueError, match="not JSON"):
        decode_payload(b"{broken")
    with pytest.raises(ValueError, match="deeper than 32"):
        decode_payload(b"[" * 40 + b"]" * 40)
    with pytest.raises(ValueError, match="holds no event"):
        decode_payload(b"null")


def test_encode_writes_the_sinks_shape_nan_as_null_and_arrays_per_message():
    out = encode_events("S", [(1, [1, math.nan]), (2, (2, 2.5)), (3.5, [3, 1.0])])
    assert [json.loads(p) for p in out] == [
        {"stream": "S", "timestamp": 1, "data": [1, None]},
        {"stream": "S", "timestamp": 2, "data": [2, 2.5]},
        {"stream": "S", "timestamp": 3.5, "data": [3, 1.0]},
    ]
    assert encode_event("S", 1, [1, math.inf]) == b'{"stream":"S","timestamp":1,"data":[1,null]}'
    grouped = encode_events("S", [(i, [i, 1.0]) for i in range(5)], per_message=2)
    assert [len(json.loads(p)) for p in grouped] == [2, 2, 1]
    assert decode_payload(grouped[0])[0][1] == {"stream": "S", "timestamp": 1, "data": [1, 1.0]}


def test_the_fast_path_only_for_the_common_shape():
    assert to_pairs(
        [{"timestamp": 1, "data": [1, 2.0]}, {"stream": "Ticks", "timestamp": 2, "data": [2, 2.0]}],
        "Ticks",
    ) == [[1, [1, 2.0]], [2, [2, 2.0]]]
    for other in (
        {"stream": "Other", "timestamp": 1, "data": [1, 2.0]},
        {"data": [1, 2.0]},
        {"timestamp": 1, "data": {"id": 1}},
        [1, 2.0],
        {"timestamp": 1, "data": [1, 2.0], "extra": 1},
    ):
        assert to_pairs([{"timestamp": 1, "data": [0, 1.0]}, other], "Ticks") is None


class ListSource:
    type = "list"

    def __init__(self, batches):
        self.batches, self.acked = list(batches), []

    def open(self):
        pass

    def fetch(self, timeout):
        return self.batches.pop(0) if self.batches else None

    def ack(self, token):
        self.acked.append(token)

    def close(self):
        pass

    def describe(self):
        return {"type": "list"}


def test_the_pump_rejects_bad_events_keeps_neighbours_and_acks_after_the_router(router, taken):
    source = ListSource(
        [
            Fetched(
                [
                    {"timestamp": 1, "data": [1, 1.0]},
                    {"stream": "Other", "data": [2, 2.0]},
                    {"timestamp": 3, "data": [3, 3.0]},
                ],
                ["a bad message"],
                "t1",
            ),
            Fetched([{"timestamp": 4, "data": [4, 4.0]}], [], "t2"),
        ]
    )
    pump = BrokerPump(source, router, KEY).start()
    try:
        assert wait_for(lambda: source.acked == ["t1", "t2"])
        assert taken.ids() == [1, 3, 4]
        assert pump.rejected == 1 and pump.bad_payloads == 1 and pump.accepted == 3
    finally:
        pump.stop()


def test_the_siddhi_option_names_of_imported_plans_are_taken():
    from connectors.mqtt_io import MqttSource
    from connectors.nats_io import NatsSource
    from connectors.position import MemoryPosition
    from connectors.stomp_io import destination
    from receivers.validation import StreamKey

    key = StreamKey(*KEY)
    m = MqttSource(key, {"topic": "t", "quality.of.service": "2"}, "mqtt://h:1", MemoryPosition())
    assert m.qos == 2
    n = NatsSource(
        key, {"destination": "orders", "durable.name": "d1"}, "nats://h:1", MemoryPosition()
    )
    assert (n.subject, n.durable) == ("orders", "d1")
    assert (
        destination({"destination": "orders", "destination.type": "queue"}, "x") == "/queue/orders"
    )
    with pytest.raises(ValueError, match="destination.type='queue' or 'topic'"):
        destination({"destination": "orders"}, "x")
