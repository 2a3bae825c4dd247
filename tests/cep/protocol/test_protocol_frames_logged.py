"""Event frames of version 2 (PROTOCOL.md section 2): receiver id and first offset added by a
worker's write-ahead log; version 1 still decodes; bad version 2 fields are refused."""

import msgpack
import pytest

from cep.protocol.exceptions import BadFrameError
from cep.protocol.frames import LogPosition, decode_batch, decode_logged_batch, encode_batch

EVENTS = [[1, ["a", 1.5]], [2, ["b", 2.5]]]


def test_version_2_round_trips_with_its_log_position():
    frame = encode_batch("S", EVENTS, "w1/-1234/P/S#ab12", 41, "http://127.0.0.1:9090")
    assert msgpack.unpackb(frame)[0] == 2
    stream, events, pos = decode_logged_batch(frame)
    assert (stream, events) == ("S", EVENTS)
    assert pos == LogPosition("w1/-1234/P/S#ab12", 41, "http://127.0.0.1:9090")
    assert decode_batch(frame) == ("S", EVENTS)  # callers that ignore offsets still work
    assert decode_logged_batch(frame, use_list=False)[2].first_offset == 41  # the spout's


def test_version_1_still_decodes_without_a_position():
    frame = encode_batch("S", EVENTS)
    assert msgpack.unpackb(frame)[0] == 1
    assert decode_logged_batch(frame) == ("S", EVENTS, None)
    assert decode_logged_batch(frame, use_list=False)[2] is None


@pytest.mark.parametrize(
    "data, fragment",
    [
        ([2, "S", EVENTS], "version 2 with 3 fields"),
        ([1, "S", EVENTS, "r", 1, None], "version 1 with 6 fields"),
        ([3, "S", EVENTS], "version 3"),
        ([2, "S", EVENTS, 7, 1, None], "receiver id string"),
        ([2, "S", EVENTS, "r", -1, None], "first offset >= 0"),
        ([2, "S", EVENTS, "r", 1.5, None], "first offset >= 0"),
    ],
)
def test_bad_frames_are_refused_with_the_reason(data, fragment):
    with pytest.raises(BadFrameError, match=fragment):
        decode_logged_batch(msgpack.packb(data))
