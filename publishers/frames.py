"""Frames from publisher bolts to a worker's CEP publisher (PROTOCOL.md section 2, issue 11).

- version 1 `[1, stream, events]`: no identity (older bolts, tests, benchmarks);
- version 3 `[3, stream, events, publisher, epoch, first_seq]`: output with an identity. The
  publisher is the bolt instance (`<topology>:<component>:<index>`), the epoch the id of the
  last checkpoint barrier the bolt passed (after a restore: the restored checkpoint; 0 before
  the first barrier; -1 when the topology takes no checkpoints) and first_seq the number of
  events of that stream the bolt sent in that epoch before this frame. A restore resets the
  engine to the checkpoint and replays the same input, so a replayed result gets the same
  identity as the first time and a sink can tell it from a new one.
- version 4 `[4, kind, publisher, checkpoint]`, control: `start` (the bolt instance started,
  restored from `checkpoint`, nil for fresh state) and `commit` (checkpoint `checkpoint` is
  complete). Both follow the bolt's data frames in order on the same socket.
"""
from typing import NamedTuple

import msgpack

from cep.protocol.exceptions import BadFrameError

FORMAT_PLAIN = 1
FORMAT_OUTPUT = 3
FORMAT_CONTROL = 4
START, COMMIT = "start", "commit"
_pack = msgpack.Packer(use_bin_type=True).pack


class Identity(NamedTuple):
    """Who sent a batch and where it stands in that sender's output."""
    publisher: str
    epoch: int
    first_seq: int


class Control(NamedTuple):
    """A publisher bolt's start or commit notice."""
    kind: str
    publisher: str
    checkpoint: object  # int or None


def encode_output(stream, events, publisher, epoch, first_seq):
    """A version 3 frame: `events` is a list of (ts, values) pairs of `stream`."""
    return _pack([FORMAT_OUTPUT, stream, events, publisher, epoch, first_seq])


def encode_control(kind, publisher, checkpoint):
    return _pack([FORMAT_CONTROL, kind, publisher, checkpoint])


def decode(frame):
    """`(stream, events, Identity or None)` for data, `(None, None, Control)` for control;
    events as tuples. Raises BadFrameError."""
    try:
        data = msgpack.unpackb(frame, raw=False, use_list=False, strict_map_key=False)
    except Exception as exc:  # noqa: BLE001 - msgpack raises several unrelated types
        raise BadFrameError(f"event frame is not msgpack: {exc}") from None
    if type(data) is not tuple or not data:
        raise BadFrameError(f"event frame must be a list, got {type(data).__name__}")
    version = data[0]
    if version == FORMAT_PLAIN and len(data) == 3:
        return _checked(data[1], data[2]) + (None,)
    if version == FORMAT_OUTPUT and len(data) == 6:
        publisher, epoch, first = data[3:]
        if not isinstance(publisher, str) or type(epoch) is not int or type(first) is not int \
                or first < 0:
            raise BadFrameError("event frame version 3 needs a publisher id string, an integer "
                                "epoch and a first sequence number >= 0")
        return _checked(data[1], data[2]) + (Identity(publisher, epoch, first),)
    if version == FORMAT_CONTROL and len(data) == 4:
        kind, publisher, cid = data[1:]
        if kind not in (START, COMMIT) or not isinstance(publisher, str) \
                or not (cid is None or type(cid) is int):
            raise BadFrameError(f"control frame {kind!r}: needs start|commit, a publisher id "
                                f"and a checkpoint id or nil")
        return None, None, Control(kind, publisher, cid)
    raise BadFrameError(f"event frame format version {version!r} with {len(data)} fields is "
                        f"not 1 (3 fields), 3 (6 fields) or 4 (4 fields)")


def _checked(stream, events):
    if not isinstance(stream, str) or type(events) is not tuple:
        raise BadFrameError("event frame must carry a stream id string and an event list")
    return stream, events
