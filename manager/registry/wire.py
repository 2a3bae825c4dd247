"""Event batch frames (PROTOCOL.md section 2): msgpack `[1, stream, [[ts, [values]], ...]]`, or
version 2 from a worker's write-ahead log, which adds where the batch was logged:
`[2, stream, events, receiver_id, first_offset, control_url]` (offsets contiguous)."""
from typing import NamedTuple

import msgpack

from manager.exceptions import ManagerError

FORMAT_VERSION = 1
FORMAT_LOGGED = 2  # events carry (receiver id, offset): issue 11's write-ahead log
_pack = msgpack.Packer(use_bin_type=True).pack


class BadFrameError(ManagerError):
    """An event batch frame does not decode or has another format version."""


class LogPosition(NamedTuple):
    """Where a version 2 batch was logged: the worker's log id, the first event's offset, and
    the worker URL that takes commit/replay requests (None: none)."""
    receiver_id: str
    first_offset: int
    control: str = None


def encode_batch(stream, events, receiver_id=None, first_offset=None, control=None):
    """One frame for `events`, a list of (ts, values) pairs of one stream; with receiver_id
    and first_offset a version 2 frame."""
    if receiver_id is None:
        return _pack([FORMAT_VERSION, stream, events])
    return _pack([FORMAT_LOGGED, stream, events, receiver_id, first_offset, control])


def decode_batch(frame):
    """(stream, [[ts, [values]], ...]) from a frame of version 1 or 2; raises BadFrameError."""
    stream, events, _ = decode_logged_batch(frame)
    return stream, events


def decode_logged_batch(frame, use_list=True):
    """(stream, events, LogPosition or None) from a frame of version 1 or 2."""
    try:
        data = msgpack.unpackb(frame, raw=False, strict_map_key=False, use_list=use_list)
    except Exception as exc:  # noqa: BLE001 - msgpack raises several unrelated types
        raise BadFrameError(f"event frame is not msgpack: {exc}") from None
    return check_frame(data)


def check_frame(data):
    """Validate a decoded frame (lists or tuples); (stream, events, LogPosition or None)."""
    if not isinstance(data, (list, tuple)) or len(data) not in (3, 6):
        raise BadFrameError(f"event frame must be [version, stream, events, ...], got "
                            f"{type(data).__name__}")
    version, stream, events = data[:3]
    if (version, len(data)) not in ((FORMAT_VERSION, 3), (FORMAT_LOGGED, 6)):
        raise BadFrameError(f"event frame format version {version!r} with {len(data)} fields "
                            f"is not 1 (3 fields) or 2 (6 fields)")
    if not isinstance(stream, str) or not isinstance(events, (list, tuple)):
        raise BadFrameError("event frame must carry a stream id string and an event list")
    if version == FORMAT_VERSION:
        return stream, events, None
    receiver_id, first, control = data[3:]
    if not isinstance(receiver_id, str) or type(first) is not int or first < 0 \
            or not (control is None or isinstance(control, str)):
        raise BadFrameError("event frame version 2 needs a receiver id string, a first offset "
                            ">= 0 and a control URL string or nil")
    return stream, events, LogPosition(receiver_id, first, control)


# request/reply maps of the registry
def pack_message(obj):
    return _pack(obj)


def unpack_message(frame):
    return msgpack.unpackb(frame, raw=False, strict_map_key=False)
