"""Event validation against a stream definition: accept good events, reject bad ones with a reason.

An event leaves here as `(timestamp_ms, row_tuple)` with values in definition order and of the
declared types (ints widened to floats for float/double attributes). A bad event is rejected with
a reason naming the attribute; its neighbours in the batch are unaffected.

The common case (events already `[ts, [values...]]` with exact types, as ZeroMQ senders produce)
runs through one generated loop per definition; anything else takes the per-event slow path.
"""

import time
from dataclasses import dataclass, field
from typing import NamedTuple

from cep.model import AttrType

INT_MIN, INT_MAX = -(2**31), 2**31 - 1
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1
MAX_REASONS = 100  # reasons kept per batch; the counts stay exact
# accepted timestamps: epoch ms from 1970-01-01 to 9999-12-31T23:59:59.999Z; a
# value outside (10^30 was one) used to pass here and kill the worker's forwarding thread
TS_MIN, TS_MAX = 0, 253402300799999

_FAST_CHECK = {
    AttrType.STRING: "type(r[{i}]) is str and (r[{i}].isascii() or _utf8(r[{i}]))",
    AttrType.INT: "type(r[{i}]) is int and {imin} <= r[{i}] <= {imax}",
    AttrType.LONG: "type(r[{i}]) is int and {lmin} <= r[{i}] <= {lmax}",
    AttrType.FLOAT: "type(r[{i}]) is float",
    AttrType.DOUBLE: "type(r[{i}]) is float",
    AttrType.BOOL: "type(r[{i}]) is bool",
    AttrType.OBJECT: "_obj_ok(r[{i}])",
}


class StreamKey(NamedTuple):
    """Where events go: tenant, execution plan name, stream id."""

    tenant: str
    plan: str
    stream: str

    def __str__(self):
        return f"{self.tenant}/{self.plan}/{self.stream}"


@dataclass
class IngestResult:
    """What happened to a batch: counts, and (index, reason) for the first rejected events."""

    accepted: int = 0
    rejected: int = 0
    errors: list = field(default_factory=list)
    refused: int = 0  # valid events the stream's full buffer refused (retry them)
    refused_indices: list = field(default_factory=list)
    # where the stream's write-ahead log stood after this batch (receiver id, appended,
    # committed): the sender's acknowledgement once `committed` reaches `appended`
    wal: dict | None = None

    def add(self, other):
        """Fold another result into this one (indexes are kept as given)."""
        self.accepted += other.accepted
        self.rejected += other.rejected
        self.refused += other.refused
        self.refused_indices.extend(other.refused_indices)
        room = MAX_REASONS - len(self.errors)
        if room > 0:
            self.errors.extend(other.errors[:room])
        return self

    @classmethod
    def of(cls, accepted, errors):
        """A result for `accepted` good events and the validator's (index, reason) list."""
        return cls(accepted, len(errors), list(errors[:MAX_REASONS]))

    def to_dict(self):
        out = {
            "accepted": self.accepted,
            "rejected": self.rejected,
            "errors": [{"index": i, "reason": r} for i, r in self.errors],
        }
        if self.refused:
            out.update(
                refused=self.refused,
                refused_indices=self.refused_indices,
                reason="backpressure",
                retry=True,
            )
        if self.wal is not None:
            out["wal"] = self.wal
        return out


def now_ms():
    return int(time.time() * 1000)


class EventValidator:
    """Checks and coerces events for one stream definition."""

    def __init__(self, definition):
        self.definition = definition
        self.names = tuple(a.name for a in definition.attributes)
        self.types = tuple(a.type for a in definition.attributes)
        self._index = {n: i for i, n in enumerate(self.names)}
        self._fast = _generate_fast_loop(self.types)

    def validate_pairs(self, pairs, now=None):
        """Validate `[(ts|None, row), ...]`; returns (good events, [(index, reason), ...])."""
        return self._fast(pairs, now_ms() if now is None else now, self._slow_pair)

    def validate_json(self, events, now=None):
        """Validate events in any JSON form (see `normalize`); returns (good, errors)."""
        now = now_ms() if now is None else now
        good, errors = [], []
        for i, raw in enumerate(events):
            try:
                good.append(self._coerce(*self.normalize(raw), now))
            except ValueError as exc:
                errors.append((i, str(exc)))
        return good, errors

    def normalize(self, raw):
        """One JSON event as (timestamp or None, positional row).

        Forms: `{"timestamp": t, "data": [v, ...]}`, `{"timestamp": t, "data": {"attr": v}}`,
        `{"attr": v, ...}` (no "data" key) and `[v, ...]`."""
        if isinstance(raw, (list, tuple)):
            return None, raw
        if not isinstance(raw, dict):
            raise ValueError(f"an event must be a JSON object or array, got {_kind(raw)}")
        if "data" not in raw:
            return None, self._row_from_names(raw)
        stream = raw.get("stream")
        if stream is not None and stream != self.definition.id:
            raise ValueError(
                f"event names stream {stream!r} but was sent to {self.definition.id!r}"
            )
        data = raw["data"]
        if isinstance(data, dict):
            data = self._row_from_names(data)
        return raw.get("timestamp"), data

    def _row_from_names(self, mapping):
        unknown = [k for k in mapping if k not in self._index and k not in ("timestamp", "stream")]
        if unknown:
            raise ValueError(
                f"unknown attribute {unknown[0]!r}; stream {self.definition.id} has "
                f"({', '.join(self.names)})"
            )
        return [mapping.get(n) for n in self.names]

    def _slow_pair(self, pair, now):
        """The slow path for one `(ts, row)` pair: a coerced event, or ValueError."""
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            raise ValueError(f"expected [timestamp, [values...]], got {_short(pair)}")
        return self._coerce(pair[0], pair[1], now)

    def _coerce(self, ts, row, now):
        if not isinstance(row, (list, tuple)):
            raise ValueError(
                f"event data must be an array of {len(self.names)} values, got {_kind(row)}"
            )
        if len(row) != len(self.names):
            raise ValueError(
                f"stream {self.definition.id} has {len(self.names)} attributes "
                f"({', '.join(self.names)}), event has {len(row)} values"
            )
        return _coerce_ts(ts, now), tuple(
            _coerce_value(v, t, n) for v, t, n in zip(row, self.types, self.names)
        )


def _coerce_ts(ts, now):
    if ts is None:
        return now
    if isinstance(ts, bool) or not isinstance(ts, (int, float)):
        raise ValueError(f"timestamp must be epoch milliseconds (a number), got {_short(ts)}")
    if isinstance(ts, float) and not ts.is_integer():
        raise ValueError(f"timestamp must be whole milliseconds, got {ts!r}")
    if ts < 0:
        raise ValueError(f"timestamp must not be negative, got {ts!r}")
    if not TS_MIN <= ts <= TS_MAX:
        raise ValueError(
            f"timestamp {_short(ts)} is outside {TS_MIN}..{TS_MAX} "
            f"(epoch milliseconds, years 1970-9999)"
        )
    return int(ts)


def _utf8(text):
    """True when `text` encodes as UTF-8 (no lone surrogate such as '\\ud800')."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _obj_ok(v):
    """The fast loop's object check: plain scalars pass, anything else is checked in full."""
    if v is None or type(v) in (float, bool) or (type(v) is str and v.isascii()):
        return True
    try:
        _check_object(v, "")
    except ValueError:
        return False
    return True


def _check_object(v, name, depth=0):
    """An object attribute's value must travel as msgpack: encodable strings, 64-bit ints."""
    if isinstance(v, str):
        if not v.isascii() and not _utf8(v):
            raise ValueError(
                f"attribute {name!r} (object): a string that is not valid UTF-8 (lone surrogate)"
            )
    elif isinstance(v, int) and not isinstance(v, bool):
        if not LONG_MIN <= v < 2**64:
            raise ValueError(
                f"attribute {name!r} (object): integer {_short(v)} does not fit 64 bits"
            )
    elif isinstance(v, (list, tuple, dict)) and depth < 64:
        items = list(v.items()) if isinstance(v, dict) else [(None, x) for x in v]
        for k, x in items:
            _check_object(k, name, depth + 1)
            _check_object(x, name, depth + 1)
    return v


def _coerce_value(v, kind, name):
    """One value as type `kind`, or ValueError naming attribute `name`."""
    if v is None:
        return v
    if kind is AttrType.OBJECT:
        return _check_object(v, name)
    if kind is AttrType.STRING:
        if isinstance(v, str):
            if v.isascii() or _utf8(v):
                return v
            raise ValueError(
                f"attribute {name!r} (string): not valid UTF-8 (a lone surrogate such as \\ud800)"
            )
    elif kind is AttrType.BOOL:
        if isinstance(v, bool):
            return v
    elif isinstance(v, bool):
        pass
    elif kind in (AttrType.INT, AttrType.LONG):
        if isinstance(v, float) and v.is_integer():
            v = int(v)
        lo, hi = (INT_MIN, INT_MAX) if kind is AttrType.INT else (LONG_MIN, LONG_MAX)
        if isinstance(v, int):
            if lo <= v <= hi:
                return v
            raise ValueError(f"attribute {name!r} ({kind}): {v} is out of range")
    elif isinstance(v, (int, float)):
        return float(v)
    raise ValueError(f"attribute {name!r} ({kind}): got {_short(v)} ({_kind(v)})")


def _generate_fast_loop(types):
    """Compile a loop over (ts, row) pairs that accepts exact-typed events without calls."""
    checks = [
        _FAST_CHECK[t].format(i=i, imin=INT_MIN, imax=INT_MAX, lmin=LONG_MIN, lmax=LONG_MAX)
        for i, t in enumerate(types)
        if t in _FAST_CHECK
    ]
    cond = " and ".join([f"len(r) == {len(types)}"] + [f"({c})" for c in checks])
    src = f"""
def fast(pairs, now, slow):
    good = []
    append = good.append
    errors = []
    for i, p in enumerate(pairs):
        if type(p) in _SEQ and len(p) == 2:
            ts, r = p
            if type(ts) is int and {TS_MIN} <= ts <= {TS_MAX} and type(r) in _SEQ and {cond}:
                append((ts, tuple(r)))
                continue
        try:
            append(slow(p, now))
        except ValueError as exc:
            errors.append((i, str(exc)))
    return good, errors
"""
    scope = {"_SEQ": (list, tuple), "_utf8": _utf8, "_obj_ok": _obj_ok}
    exec(compile(src, f"<validator {len(types)} attrs>", "exec"), scope)
    return scope["fast"]


def _kind(v):
    return {
        dict: "object",
        list: "array",
        tuple: "array",
        str: "string",
        bool: "bool",
        int: "integer",
        float: "number",
        type(None): "null",
    }.get(type(v), type(v).__name__)


def _short(v, limit=60):
    text = repr(v)
    return text if len(text) <= limit else text[:limit] + "..."
