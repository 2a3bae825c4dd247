"""Event batch frames (PROTOCOL.md section 2): msgpack `[1, stream, [[ts, [values]], ...]]`."""
import msgpack

from manager.exceptions import ManagerError

FORMAT_VERSION = 1
_pack = msgpack.Packer(use_bin_type=True).pack


class BadFrameError(ManagerError):
    """An event batch frame does not decode or has another format version."""


def encode_batch(stream, events):
    """One frame for `events`, a list of (ts, values) pairs of one stream."""
    return _pack([FORMAT_VERSION, stream, events])


def decode_batch(frame):
    """(stream, [[ts, [values]], ...]) from a frame; raises BadFrameError."""
    try:
        data = msgpack.unpackb(frame, raw=False, strict_map_key=False)
    except Exception as exc:  # noqa: BLE001 - msgpack raises several unrelated types
        raise BadFrameError(f"event frame is not msgpack: {exc}") from None
    if not isinstance(data, list) or len(data) != 3:
        raise BadFrameError(f"event frame must be [version, stream, events], got {type(data).__name__}")
    version, stream, events = data
    if version != FORMAT_VERSION:
        raise BadFrameError(f"event frame format version {version!r} is not {FORMAT_VERSION}")
    if not isinstance(stream, str) or not isinstance(events, list):
        raise BadFrameError("event frame must carry a stream id string and an event list")
    return stream, events


# request/reply maps of the registry
def pack_message(obj):
    return _pack(obj)


def unpack_message(frame):
    return msgpack.unpackb(frame, raw=False, strict_map_key=False)
