"""Every frame kind of cep.protocol.frames round-trips, and bad frames of every kind raise
BadFrameError naming what was wrong (never another exception type)."""

import zlib

import msgpack
import pytest

from cep.protocol import frames
from cep.protocol.exceptions import BadFrameError, ProtocolError

EVENTS = [
    [1700000000000, ["IBM", 75.5, 100, None, True]],
    [1700000000001, ["é", -1.0, 0, 2, False]],
]
TUPLES = tuple((ts, tuple(values)) for ts, values in EVENTS)
ROWS = ((1, "a", 1.5), (2, "b", None))
NOT_MSGPACK = b"\xc1garbage"


def test_event_batch_v1_round_trips_as_lists_and_as_tuples():
    frame = frames.encode_batch("S", EVENTS)
    assert msgpack.unpackb(frame)[0] == frames.FORMAT_VERSION == 1
    assert frames.decode_batch(frame) == ("S", EVENTS)
    assert frames.decode_output(frame) == ("S", TUPLES, None)
    assert frames.decode_logged_batch(frame, use_list=False) == ("S", TUPLES, None)


def test_event_batch_v2_round_trips_with_its_position():
    frame = frames.encode_batch("S", EVENTS, "w/1/P/S#x", 7, None)
    assert msgpack.unpackb(frame)[0] == frames.FORMAT_LOGGED == 2
    assert frames.decode_logged_batch(frame) == ("S", EVENTS, frames.LogPosition("w/1/P/S#x", 7))
    assert frames.decode_batch(frame) == ("S", EVENTS)
    with pytest.raises(BadFrameError, match="version 2 with 6 fields is not 1 \\(3 fields\\), 3"):
        frames.decode_output(frame)  # the publisher service takes versions 1, 3 and 4


@pytest.mark.parametrize(
    "data, why",
    [
        ({"x": 1}, "must be \\[version, stream, events, ...\\], got dict"),
        ([1, "S"], "got an array of 2"),
        ([9, "S", []], "format version 9 with 3 fields"),
        ([2, "S", []], "format version 2 with 3 fields"),
        ([1, 5, []], "stream id string and an event list, got int and (list|tuple)"),
        ([1, "S", "nope"], "got str and str"),
        ([2, "S", [], 5, 0, None], "needs a receiver id string"),
        ([2, "S", [], "r", -1, None], "first offset >= 0"),
        ([2, "S", [], "r", 0, 5], "control URL string or nil"),
    ],
)
@pytest.mark.parametrize("decode", [frames.decode_batch, frames.decode_logged_batch])
def test_bad_event_batches_are_refused_with_the_reason(data, why, decode):
    with pytest.raises(BadFrameError, match=why):
        decode(msgpack.packb(data))


@pytest.mark.parametrize(
    "decode",
    [
        frames.decode_batch,
        frames.decode_output,
        frames.decode_pairs,
        frames.decode_header,
        frames.decode_rows,
        frames.unpack_message,
    ],
)
@pytest.mark.parametrize("frame", [NOT_MSGPACK, b"", msgpack.packb([1]) + b"\x01"])
def test_undecodable_bytes_raise_bad_frame_for_every_kind(decode, frame):
    with pytest.raises(BadFrameError, match="is not msgpack"):
        decode(frame)


def test_publisher_output_and_notices_round_trip():
    frame = frames.encode_output("Out", EVENTS, "T[1]:pub:0", 4, 10)
    assert msgpack.unpackb(frame)[0] == frames.FORMAT_OUTPUT == 3
    assert frames.decode_output(frame) == ("Out", TUPLES, frames.Identity("T[1]:pub:0", 4, 10))
    for kind, cid in ((frames.START, None), (frames.COMMIT, 7)):
        notice = frames.encode_control(kind, "T[1]:pub:0", cid)
        assert msgpack.unpackb(notice)[0] == frames.FORMAT_CONTROL == 4
        assert frames.decode_output(notice) == (None, None, frames.Control(kind, "T[1]:pub:0", cid))


@pytest.mark.parametrize(
    "data, why",
    [
        ({"x": 1}, "must be an array, got dict"),
        ([], "must be an array, got an array of 0"),
        ([3, "Out", [], "p", "x", 0], "version 3 needs a publisher id string, an integer epoch"),
        ([3, "Out", [], "p", 1, -1], "first sequence number >= 0"),
        ([3, 5, [], "p", 1, 0], "stream id string and an event list, got int and tuple"),
        ([4, "rollback", "p", 7], "control frame 'rollback': needs start\\|commit"),
        ([4, "commit", "p", "7"], "checkpoint id or nil"),
        ([5, "Out", []], "format version 5 with 3 fields"),
    ],
)
def test_bad_publisher_frames_are_refused(data, why):
    with pytest.raises(BadFrameError, match=why):
        frames.decode_output(msgpack.packb(data))


def test_ingest_payload_round_trips_and_refuses_non_arrays():
    assert frames.decode_pairs(frames.encode_pairs(EVENTS)) == TUPLES
    with pytest.raises(BadFrameError, match="array of \\[ts, row\\] pairs, got dict"):
        frames.decode_pairs(msgpack.packb({"ts": 1}))


def test_task_data_and_barrier_headers_round_trip_with_a_version():
    head = frames.header("S", "Bolt", 12.5, 3)
    assert msgpack.unpackb(head)[0] == frames.TASK_VERSION
    assert frames.decode_header(head) == ("S", "Bolt", 12.5, 3, None)
    assert frames.decode_rows(frames.encode_rows(ROWS)) == ROWS
    head, payload = frames.barrier("Spout", 42, 0)
    assert frames.decode_header(head) == (frames.BARRIER, "Spout", 42, 0, None) and payload == b""


@pytest.mark.parametrize(
    "data, why",
    [
        (("S", "Bolt", 1.0, 3), "task header format version 'S' is not 1"),
        ((2, "S", "Bolt", 1.0, 3), "task header format version 2 is not 1"),
        (
            (1, "S"),
            "must be \\[version, stream, source, origin, task\\(, lineage\\)\\], got an array of 2",
        ),
        ({"stream": "S"}, "got dict"),
    ],
)
def test_bad_task_headers_are_refused(data, why):
    with pytest.raises(BadFrameError, match=why):
        frames.decode_header(msgpack.packb(data))


def test_bad_task_payload_is_refused():
    with pytest.raises(BadFrameError, match="array of rows, got int"):
        frames.decode_rows(msgpack.packb(5))


def test_map_messages_round_trip_and_non_maps_are_refused():
    message = {"op": "register", "tenant": -1234, "ports": [1, 2], "blob": b"\x00\x01", 5: "x"}
    assert frames.unpack_message(frames.pack_message(message)) == message
    for bad in (msgpack.packb([1, 2]), msgpack.packb("op")):
        with pytest.raises(BadFrameError, match="must be a msgpack map"):
            frames.unpack_message(bad)


def test_bad_frame_is_a_protocol_error_and_a_value_error():
    """Callers that guard decoding with ValueError (the topology driver) keep working."""
    assert issubclass(BadFrameError, ProtocolError) and issubclass(BadFrameError, ValueError)


def test_deprecated_paths_are_the_same_objects():
    from manager.registry import client, wire
    from cep.protocol import registry_client

    assert wire.encode_batch is frames.encode_batch and wire.BadFrameError is BadFrameError
    assert client.RegistryClient is registry_client.RegistryClient


def test_ha_input_round_trips_as_tuples():
    items = [["-1234/P", 7, "S", [[1000, ["a", 1.5]]]], ["-1234/P", 8, "S", []]]
    assert frames.decode_ha_input(frames.encode_ha_input(items)) == (
        ("-1234/P", 7, "S", ((1000, ("a", 1.5)),)),
        ("-1234/P", 8, "S", ()),
    )


@pytest.mark.parametrize(
    "data, why",
    [
        ([2, []], "HA input must be [1,"),  # another version
        ([1, [["P", 1, "S"]]], "item must be [plan, seq"),  # an item of 3
        ({"items": []}, "HA input must be [1,"),  # a map
    ],
)
def test_bad_ha_input_is_refused(data, why):
    with pytest.raises(BadFrameError, match=why.replace("[", r"\[")):
        frames.decode_ha_input(msgpack.packb(data))


def test_ha_state_round_trips_and_bad_blobs_are_refused():
    state = {"digest": "abc", "engine": b"\x00\x01", "seq": {"Out": 3}}
    assert frames.decode_ha_state(frames.encode_ha_state(state)) == dict(state, format=1)
    with pytest.raises(BadFrameError, match="not zlib data"):
        frames.decode_ha_state(b"plain bytes")
    with pytest.raises(BadFrameError, match="format 1, got 2"):
        frames.decode_ha_state(zlib.compress(msgpack.packb({"format": 2})))
    with pytest.raises(BadFrameError, match="HA state of"):
        frames.decode_ha_state(zlib.compress(b"\xc1"))
