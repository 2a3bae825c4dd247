"""Every msgpack frame on the wire, one codec (PROTOCOL.md). Strings are UTF-8, bytes stay bytes.

Array frames start with their format version, so a reader can reject a frame of another
version with a clear error; map messages (registry requests/replies, driver control, task
reports) grow by adding keys and carry no version.

| kind | frames | encode | decode |
|---|---|---|---|
| event batch v1 | `[1, stream, [[ts, [v...]], ...]]` | encode_batch | decode_batch, decode_logged_batch, decode_output |
| event batch v2 | `[2, stream, events, receiver id, first offset, control URL]` | encode_batch(..., receiver_id, first_offset) | decode_logged_batch |
| publisher output v3 | `[3, stream, events, publisher, epoch, first_seq(, fence)]` | encode_output | decode_output (also v1) |
| publisher control v4 | `[4, "start" or "commit", publisher, checkpoint or nil(, fence)]` | encode_control | decode_output |
| publisher output v5 | `[5, stream, events, publisher, epoch, first_seq, [[lane, first, count], ...](, fence)]` | encode_output(..., runs) | decode_output |
| ingest payload | `[[ts, [v...]], ...]` (external ZeroMQ receiver, no version) | encode_pairs | decode_pairs |
| task data | header `[1, stream, source, origin_ts, task(, lineage)]` + payload rows | header, encode_rows | decode_header, decode_rows |
| task barrier | header with stream BARRIER, checkpoint id for origin_ts, empty payload | barrier | decode_header |
| map message | `{...}` (registry, control, reports) | pack_message | unpack_message |
| HA input v1 | `[1, [[plan, seq, stream, events], ...]]` (active to passive, HTTP body) | encode_ha_input | decode_ha_input |
| HA state v1 | zlib of the map `{format: 1, ...}` (a plan's state for a starting passive) | encode_ha_state | decode_ha_state |

Decoders raise BadFrameError naming the kind, what was wrong and the bad value's type; they
decode arrays as tuples where the caller iterates events (2-3x cheaper than lists).
"""

import zlib
from typing import Any, Callable, NamedTuple, Optional, Sequence

import msgpack

from cep.protocol.exceptions import BadFrameError

FORMAT_VERSION = 1
FORMAT_LOGGED = 2  # events carry (receiver id, offset): a worker's write-ahead log
FORMAT_OUTPUT = 3  # publisher bolt output with an identity
FORMAT_CONTROL = 4  # publisher bolt start/commit notices
FORMAT_LINEAGE = 5  # publisher bolt output whose events carry their lanes' sequence numbers
START, COMMIT = "start", "commit"
TASK_VERSION = 1  # version of the task data header between topology instances
BARRIER = "\x00barrier"  # no declared stream can have this name
HA_VERSION = 1  # the standalone HA pair's input and state frames (cep/worker/ha)

_pack: Callable[[Any], bytes] = msgpack.Packer(use_bin_type=True).pack
_unpackb: Callable[..., Any] = msgpack.unpackb

# a run of events in one lane: (lane, first sequence number, count)
Run = tuple[str, int, int]
# who may publish: (driver generation, stage attempt) of the sending task, compared in order
Fence = tuple[int, int]


class LogPosition(NamedTuple):
    """Where a version 2 batch was logged: the worker's log id, the first event's offset, and
    the worker URL that takes commit/replay requests (None: none)."""

    receiver_id: str
    first_offset: int
    control: Optional[str] = None


def _load(frame: bytes, kind: str, use_list: bool) -> Any:
    try:
        return _unpackb(frame, raw=False, strict_map_key=False, use_list=use_list)
    except Exception as exc:  # noqa: BLE001 - msgpack raises several unrelated types
        raise BadFrameError(f"{kind} of {len(frame)} bytes is not msgpack: {exc}") from None


# event batches (PROTOCOL.md section 2)
def encode_batch(
    stream: str,
    events: Sequence[Any],
    receiver_id: Optional[str] = None,
    first_offset: Optional[int] = None,
    control: Optional[str] = None,
) -> bytes:
    """One frame for `events`, a list of (ts, values) pairs of one stream; with receiver_id
    and first_offset a version 2 frame."""
    if receiver_id is None:
        return _pack((FORMAT_VERSION, stream, events))
    return _pack((FORMAT_LOGGED, stream, events, receiver_id, first_offset, control))


def decode_batch(frame: bytes) -> tuple[str, Any]:
    """(stream, [[ts, [values]], ...]) as lists from a frame of version 1 or 2."""
    stream, events, _ = decode_logged_batch(frame)
    return stream, events


def decode_logged_batch(
    frame: bytes, use_list: bool = True
) -> tuple[str, Any, Optional[LogPosition]]:
    """(stream, events, LogPosition or None) from a frame of version 1 or 2."""
    return check_frame(_load(frame, "event frame", use_list))


def check_frame(data: Any) -> tuple[str, Any, Optional[LogPosition]]:
    """Validate a decoded event frame (lists or tuples); (stream, events, LogPosition|None)."""
    if not isinstance(data, (list, tuple)) or len(data) not in (3, 6):
        raise BadFrameError(
            f"event frame must be [version, stream, events, ...], got {_shape(data)}"
        )
    version, stream, events = data[:3]
    if (version, len(data)) not in ((FORMAT_VERSION, 3), (FORMAT_LOGGED, 6)):
        raise BadFrameError(
            f"event frame format version {version!r} with {len(data)} fields "
            f"is not 1 (3 fields) or 2 (6 fields)"
        )
    if not isinstance(stream, str) or not isinstance(events, (list, tuple)):
        raise BadFrameError(
            f"event frame must carry a stream id string and an event list, "
            f"got {type(stream).__name__} and {type(events).__name__}"
        )
    if version == FORMAT_VERSION:
        return stream, events, None
    receiver_id, first, control = data[3:]
    if (
        not isinstance(receiver_id, str)
        or type(first) is not int
        or first < 0
        or not (control is None or isinstance(control, str))
    ):
        raise BadFrameError(
            "event frame version 2 needs a receiver id string, a first offset "
            ">= 0 and a control URL string or nil"
        )
    return stream, events, LogPosition(receiver_id, first, control)


# publisher bolt -> worker: version 1, or 3 with an output identity, and 4 notices
class Identity(NamedTuple):
    """Who sent a batch and where it stands in that sender's output: the bolt instance
    (`<topology>:<component>:<index>`), the epoch (the last checkpoint barrier it passed; 0
    before the first, -1 without checkpoints) and the stream's events sent in that epoch
    before this frame. `runs` (version 5), when set, covers the events in order with
    `(lane, first seq, count)`: each event's lane (topology/lineage.py) and its number in
    that lane, which a replay gives it again whatever the batch boundaries and the
    interleaving of upstream instances were; deduplication compares those. `fence`, when
    set, is the sender's `(driver generation, stage attempt)` (publishers/fencing.py): a
    worker takes output only from a topology's newest attempt."""

    publisher: str
    epoch: int
    first_seq: int
    runs: Optional[tuple[Run, ...]] = None
    fence: Optional[Fence] = None


class Control(NamedTuple):
    """A publisher bolt's `start` (restored from `checkpoint`, None: fresh) or `commit`
    (checkpoint `checkpoint` is complete) notice, in order with its data frames."""

    kind: str
    publisher: str
    checkpoint: Optional[int]
    fence: Optional[Fence] = None


def encode_output(
    stream: str,
    events: Sequence[Any],
    publisher: str,
    epoch: int,
    first_seq: int,
    runs: Optional[Sequence[Run]] = None,
    fence: Optional[Fence] = None,
) -> bytes:
    """A version 3 frame (version 5 with `runs`, [(lane, first seq, count)] covering the
    events): `events` is a list of (ts, values) pairs of `stream`; `fence` (the sender's
    (generation, attempt)) is appended when given."""
    tail = () if fence is None else (fence,)
    if runs is None:
        return _pack((FORMAT_OUTPUT, stream, events, publisher, epoch, first_seq) + tail)
    return _pack((FORMAT_LINEAGE, stream, events, publisher, epoch, first_seq, runs) + tail)


def encode_control(
    kind: str, publisher: str, checkpoint: Optional[int], fence: Optional[Fence] = None
) -> bytes:
    """A version 4 frame: a publisher bolt's start or commit notice (with its fence)."""
    tail = () if fence is None else (fence,)
    return _pack((FORMAT_CONTROL, kind, publisher, checkpoint) + tail)


def _fence(value: Any, kind: str) -> Fence:
    if type(value) is not tuple or len(value) != 2 or any(type(v) is not int for v in value):
        raise BadFrameError(
            f"{kind}: the fence must be [generation, attempt] (two integers), got {_shape(value)}"
        )
    return value


def decode_output(frame: bytes) -> tuple[Optional[str], Any, Optional[Identity | Control]]:
    """`(stream, events, Identity or None)` for a data frame of version 1 or 3, `(None, None,
    Control)` for a version 4 notice; events as tuples."""
    data = _load(frame, "event frame", False)
    if type(data) is not tuple or not data:
        raise BadFrameError(f"event frame must be an array, got {_shape(data)}")
    version = data[0]
    if version == FORMAT_VERSION and len(data) == 3:
        return _checked(data[1], data[2]) + (None,)
    fence = None
    if (
        version in (FORMAT_OUTPUT, FORMAT_LINEAGE, FORMAT_CONTROL)
        and len(data) == _FIELDS[version] + 1
    ):
        fence, data = _fence(data[-1], f"event frame version {version}"), data[:-1]
    if version == FORMAT_OUTPUT and len(data) == 6:
        publisher, epoch, first = data[3:]
        if (
            not isinstance(publisher, str)
            or type(epoch) is not int
            or type(first) is not int
            or first < 0
        ):
            raise BadFrameError(
                "event frame version 3 needs a publisher id string, an integer "
                "epoch and a first sequence number >= 0"
            )
        return _checked(data[1], data[2]) + (Identity(publisher, epoch, first, None, fence),)
    if version == FORMAT_LINEAGE and len(data) == 7:
        publisher, epoch, first, runs = data[3:]
        stream, events = _checked(data[1], data[2])
        if (
            not isinstance(publisher, str)
            or type(epoch) is not int
            or type(first) is not int
            or first < 0
            or type(runs) is not tuple
            or any(
                type(r) is not tuple
                or len(r) != 3
                or not isinstance(r[0], str)
                or type(r[1]) is not int
                or type(r[2]) is not int
                or r[1] < 0
                or r[2] < 0
                for r in runs
            )
            or sum(r[2] for r in runs) != len(events)
        ):
            raise BadFrameError(
                "event frame version 5 needs a publisher id string, an integer "
                "epoch, a first sequence number >= 0 and runs [lane, first "
                ">= 0, count] that cover the events"
            )
        return stream, events, Identity(publisher, epoch, first, runs, fence)
    if version == FORMAT_CONTROL and len(data) == 4:
        kind, publisher, cid = data[1:]
        if (
            kind not in (START, COMMIT)
            or not isinstance(publisher, str)
            or not (cid is None or type(cid) is int)
        ):
            raise BadFrameError(
                f"control frame {kind!r}: needs start|commit, a publisher id "
                f"and a checkpoint id or nil"
            )
        return None, None, Control(kind, publisher, cid, fence)
    raise BadFrameError(
        f"event frame format version {version!r} with {len(data)} fields is "
        f"not 1 (3 fields), 3 (6 fields), 4 (4 fields) or 5 (7 fields), "
        f"each but 1 with a fence or without"
    )


_FIELDS = {FORMAT_OUTPUT: 6, FORMAT_CONTROL: 4, FORMAT_LINEAGE: 7}  # without the fence


def output_identity_key(frame: bytes) -> Optional[str]:
    """`publisher:generation.attempt:stream:epoch:first_seq` of an output frame (`-` for no
    fence), or None for a notice: a key that names one frame of one stage attempt (the NATS
    transport's message id). Reads the frame's head and skips its events."""
    unpacker = msgpack.Unpacker(raw=False, strict_map_key=False)
    unpacker.feed(frame)
    size = unpacker.read_array_header()
    version = unpacker.unpack()
    if version not in (FORMAT_OUTPUT, FORMAT_LINEAGE):
        return None
    stream = unpacker.unpack()
    unpacker.skip()  # the events
    publisher, epoch, first = unpacker.unpack(), unpacker.unpack(), unpacker.unpack()
    fields = 6
    if version == FORMAT_LINEAGE:
        unpacker.skip()  # the runs: epoch and first sequence number already identify the frame
        fields = 7
    fence = unpacker.unpack() if size > fields else None
    where = f"{fence[0]}.{fence[1]}" if fence else "-"
    return f"{publisher}:{where}:{stream}:{epoch}:{first}"


def _checked(stream: Any, events: Any) -> tuple[str, Any]:
    if not isinstance(stream, str) or type(events) is not tuple:
        raise BadFrameError(
            f"event frame must carry a stream id string and an event list, "
            f"got {type(stream).__name__} and {type(events).__name__}"
        )
    return stream, events


# the external ZeroMQ receiver's payload (cep/worker/README.md): a bare array of pairs
def encode_pairs(pairs: Sequence[Any]) -> bytes:
    """msgpack payload for a batch of (ts, row) pairs."""
    return _pack(pairs)


def decode_pairs(payload: bytes) -> Any:
    """The (ts, row) pairs of one ingest payload, as tuples."""
    events = _load(payload, "payload", False)
    if type(events) is not tuple:
        raise BadFrameError(
            f"payload must be a msgpack array of [ts, row] pairs, got {_shape(events)}"
        )
    return events


# task data between topology instances (topology/README.md)
def header(
    stream: str,
    source: str,
    origin_ts: Any,
    task: int = -1,
    lineage: Optional[Sequence[Run]] = None,
) -> bytes:
    """The header frame of a data message from task `task` of component `source`; `lineage`
    (runs `(key, first seq, count)` covering the rows, topology/lineage.py) when it has one."""
    if lineage is None:
        return _pack((TASK_VERSION, stream, source, origin_ts, task))
    return _pack((TASK_VERSION, stream, source, origin_ts, task, lineage))


def barrier(source: str, checkpoint_id: int, task: int) -> tuple[bytes, bytes]:
    """The two frames of checkpoint `checkpoint_id`'s barrier from task `task`."""
    return _pack((TASK_VERSION, BARRIER, source, checkpoint_id, task)), b""


def decode_header(frame: bytes) -> tuple[Any, ...]:
    """(stream, source, origin_ts, task, lineage or None) of a data or barrier header."""
    data = _load(frame, "task header", False)
    if type(data) is tuple and len(data) == 5 and data[0] == TASK_VERSION:
        return data[1:] + (None,)
    if type(data) is tuple and len(data) == 6 and data[0] == TASK_VERSION:
        runs = data[5]
        if type(runs) is not tuple or any(
            type(r) is not tuple
            or len(r) != 3
            or not isinstance(r[0], str)
            or type(r[1]) is not int
            or type(r[2]) is not int
            or r[2] < 0
            for r in runs
        ):
            raise BadFrameError(
                f"task header lineage must be an array of [key, first seq, "
                f"count], got {_shape(runs)}"
            )
        return data[1:5] + (runs,)
    if type(data) is tuple and data and data[0] != TASK_VERSION:
        raise BadFrameError(f"task header format version {data[0]!r} is not {TASK_VERSION}")
    raise BadFrameError(
        f"task header must be [version, stream, source, origin, task"
        f"(, lineage)], "
        f"got {_shape(data)}"
    )


encode_rows = _pack


def decode_rows(payload: bytes) -> Any:
    """A data payload as a tuple of row tuples."""
    rows = _load(payload, "task payload", False)
    if type(rows) is not tuple:
        raise BadFrameError(f"task payload must be an array of rows, got {_shape(rows)}")
    return rows


# map messages: registry requests and replies, driver control, task reports
def pack_message(obj: Any) -> bytes:
    """One frame for a map message."""
    return _pack(obj)


def unpack_message(frame: bytes) -> dict[Any, Any]:
    """A map message; BadFrameError when the frame is not a msgpack map."""
    data = _load(frame, "message", True)
    if not isinstance(data, dict):
        raise BadFrameError(f"message must be a msgpack map, got {_shape(data)}")
    return data


# the standalone HA pair (cep/worker/ha): forwarded input and a plan's state, over HTTP
def encode_ha_input(items: Sequence[Any]) -> bytes:
    """The active's forwarded input: items are [plan key, seq, stream, events]."""
    return _pack((HA_VERSION, items))


def decode_ha_input(body: bytes) -> Any:
    """The forwarded items as tuples; BadFrameError for any other shape or version."""
    data = _load(body, "HA input", False)
    if (
        type(data) is not tuple
        or len(data) != 2
        or data[0] != HA_VERSION
        or type(data[1]) is not tuple
    ):
        raise BadFrameError(
            f"HA input must be [{HA_VERSION}, [[plan, seq, stream, events], "
            f"...]], got {_shape(data)}"
        )
    for item in data[1]:
        if type(item) is not tuple or len(item) != 4:
            raise BadFrameError(
                f"HA input item must be [plan, seq, stream, events], got {_shape(item)}"
            )
    return data[1]


def encode_ha_state(state: dict[str, Any]) -> bytes:
    """A plan's state (a map) for a starting passive, compressed."""
    return zlib.compress(_pack(dict(state, format=HA_VERSION)), 1)


def decode_ha_state(blob: bytes) -> dict[str, Any]:
    """The state map; BadFrameError when the blob is not a compressed version 1 state."""
    try:
        raw = zlib.decompress(blob)
    except zlib.error as exc:
        raise BadFrameError(f"HA state of {len(blob)} bytes is not zlib data: {exc}") from None
    state = _load(raw, "HA state", True)
    if not isinstance(state, dict) or state.get("format") != HA_VERSION:
        found = state.get("format") if isinstance(state, dict) else _shape(state)
        raise BadFrameError(f"HA state must be a map with format {HA_VERSION}, got {found!r}")
    return state


def _shape(data: Any) -> str:
    if isinstance(data, (list, tuple)):
        return f"an array of {len(data)}"
    return type(data).__name__
