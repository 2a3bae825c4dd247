"""Checking and coercing input rows to a stream definition, one pass per batch.

The fastest path converts the whole batch with msgspec in one C pass (exact types, None for
null, integer ranges; int to double and lists to tuples converted as the per-event path does).
Without msgspec, or when it refuses the batch, the next path checks whole columns at C speed
(`map(type, ...)` against the expected types, a C array of 32/64-bit integers for integer
ranges) and passes the rows on untouched; only a batch with something to convert or reject
takes the per-event path, which converts what it can (int to double, ...) and rejects the
rest with an EventError naming the attribute."""

from array import array
from itertools import chain, repeat
from typing import Annotated, Any, List, Optional, Tuple

from cep.engine import javamath
from cep.errors import EventError
from cep.model import AttrType

try:
    import msgspec
except ImportError:  # the pure-Python column checks below do the same, 2.6x slower
    msgspec = None

_NONE = type(None)
_EXACT = {
    AttrType.STRING: {str},
    AttrType.INT: {int},
    AttrType.LONG: {int},
    AttrType.DOUBLE: {float},
    AttrType.BOOL: {bool},
    AttrType.FLOAT: None,
    AttrType.OBJECT: None,
}
_RANGE = {
    AttrType.INT: (javamath.INT_MIN, javamath.INT_MAX),
    AttrType.LONG: (javamath.LONG_MIN, javamath.LONG_MAX),
}
if msgspec is not None:  # attribute types as msgspec types; FLOAT needs 32-bit rounding
    _MSGSPEC = {
        AttrType.STRING: Optional[str],
        AttrType.DOUBLE: Optional[float],
        AttrType.BOOL: Optional[bool],
        AttrType.OBJECT: Any,
        AttrType.FLOAT: None,
        AttrType.INT: Optional[
            Annotated[int, msgspec.Meta(ge=javamath.INT_MIN, le=javamath.INT_MAX)]
        ],
        AttrType.LONG: Optional[
            Annotated[int, msgspec.Meta(ge=javamath.LONG_MIN, le=javamath.LONG_MAX)]
        ],
    }
    _MSGSPEC_ERRORS = (msgspec.ValidationError, TypeError, ValueError, OverflowError)
# array type codes whose items are exactly 32 and 64 bits: building such an array from a
# column is a one-pass range check at C speed (OverflowError when a value does not fit)
_ARRAY = {
    AttrType.INT: next(c for c in "ilq" if array(c).itemsize == 4),
    AttrType.LONG: next(c for c in "lqi" if array(c).itemsize == 8),
}


def _convert(value, t):
    """The value as type t, or raise ValueError with the reason."""
    if value is None or t == AttrType.OBJECT:
        return value
    if t == AttrType.STRING:
        if isinstance(value, str):
            return value
    elif t == AttrType.BOOL:
        if isinstance(value, bool):
            return value
    elif isinstance(value, bool):
        pass
    elif t in _RANGE:
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, int):
            lo, hi = _RANGE[t]
            if lo <= value <= hi:
                return value
            raise ValueError(f"{value} is out of the range of {t}")
    elif isinstance(value, float):
        return value if t == AttrType.DOUBLE else javamath.f32(value)
    elif isinstance(value, int):  # one rounding, as Java's (float) of a long
        return float(value) if t == AttrType.DOUBLE else javamath.int_to_f32(value)
    raise ValueError(f"expected {t}, got {type(value).__name__} {value!r}")


def row_type(types):
    """The msgspec type of a row of these attribute types, or None (no msgspec, or a FLOAT
    or OBJECT attribute). Strict conversion to it, and JSON decoding into it, accept exactly
    the rows the per-event path accepts with no conversion but int to double (as it does);
    its results are `validated` rows (exact types, integers in range)."""
    if msgspec is None or any(_MSGSPEC[t] is None or t == AttrType.OBJECT for t in types):
        return None
    return Tuple[tuple(_MSGSPEC[t] for t in types)]


def _batch_type(types):
    """The msgspec type of a batch of `(int timestamp, row)` pairs, or None (no msgspec, or
    a FLOAT attribute). Strict conversion to it accepts what the per-event path accepts
    unchanged, plus int for double, lists for tuples (both converted, as that path does);
    anything else raises and the batch takes the other paths."""
    if msgspec is None or any(_MSGSPEC[t] is None for t in types):
        return None
    return List[Tuple[int, Tuple[tuple(_MSGSPEC[t] for t in types)]]]


class RowCoercer:
    """Checks `(timestamp, row)` pairs against `definition`; see the module docstring."""

    def __init__(self, definition):
        self.definition = definition
        self.types = [a.type for a in definition.attributes]
        self.names = [a.name for a in definition.attributes]
        self.n = len(self.types)
        self.fast_ok = all(_EXACT[t] is not None for t in self.types)
        self.quick = self._make_quick()
        self._sig = [next(iter(_EXACT[t])) for t in self.types] if self.fast_ok else []
        self._ranges = [(i, _ARRAY[t]) for i, t in enumerate(self.types) if t in _ARRAY]
        self._pairs, self._rows, self._lens = [], [], []
        self._batch_type = _batch_type(self.types)

    def _make_quick(self):
        """A generated check `quick(row)`: True when the row is a tuple of exactly typed values
        (None allowed) that needs no conversion."""
        if not self.fast_ok:
            return lambda row: False
        conds = [f"type(row) is tuple and len(row) == {self.n}"]
        for i, t in enumerate(self.types):
            (py,) = _EXACT[t]
            c = f"(type(row[{i}]) is {py.__name__} or row[{i}] is None)"
            if t in _RANGE:
                lo, hi = _RANGE[t]
                c = f"((type(row[{i}]) is int and {lo} <= row[{i}] <= {hi}) or row[{i}] is None)"
            conds.append(c)
        ns = {}
        exec(f"def quick(row):\n    return {' and '.join(conds)}\n", ns)
        return ns["quick"]

    def coerce(self, events, default_ts):
        """-> (list of (ts, row, CURRENT), list of (index, EventError))."""
        if self._batch_type is not None and events:
            try:
                pairs = msgspec.convert(events, self._batch_type, strict=True)
            except _MSGSPEC_ERRORS:
                pass  # something to reject, a null timestamp, a conversion msgspec refuses
            else:
                return [(t, r, 0) for t, r in pairs], []
        if self.fast_ok and events:
            good = self._fast(events, default_ts)
            if good is not None:
                return good, []
        good, bad = [], []
        for i, ev in enumerate(events):
            try:
                good.append(self.coerce_one(ev, default_ts))
            except EventError as exc:
                bad.append((i, exc))
        return good, bad

    def _fast(self, events, default_ts):
        """The batch as events when every value already has its exact type, else None.

        Type checks run at C speed over flattened lists: `map(type, ...)` compared with the
        expected sequence of types (identity comparisons), plus min/max for integer ranges."""
        n = len(events)
        flat = list(chain.from_iterable(events))
        if len(flat) != 2 * n:
            return None
        stamp = None
        if list(map(type, flat)) != self._pair_sig(n):
            # timestamps left to the runtime's clock: all None, rows tuples
            if set(map(type, flat[0::2])) != {_NONE} or set(map(type, flat[1::2])) != {tuple}:
                return None
            stamp = default_ts
        rows = flat[1::2]
        if list(map(len, rows)) != self._len_sig(n):
            return None
        values = list(chain.from_iterable(rows))
        if list(map(type, values)) != self._row_sig(n):
            return None
        try:  # exact ints (checked above) fit a 32/64-bit C array exactly when in range
            for i, code in self._ranges:
                array(code, values[i :: self.n])
        except OverflowError:
            return None
        return list(zip(repeat(stamp, n) if stamp is not None else flat[0::2], rows, repeat(0, n)))

    def _pair_sig(self, n):
        if len(self._pairs) != 2 * n:
            self._pairs = [int, tuple] * n
        return self._pairs

    def _len_sig(self, n):
        if len(self._lens) != n:
            self._lens = [self.n] * n
        return self._lens

    def _row_sig(self, n):
        if len(self._rows) != self.n * n:
            self._rows = self._sig * n
        return self._rows

    def coerce_one(self, event, default_ts):
        """One `(timestamp, row)` pair -> `(ts, row, CURRENT)`, or raise EventError."""
        sid = self.definition.id
        try:
            ts, row = event
            if type(ts) is int and self.quick(row):
                return ts, row, 0
        except (TypeError, ValueError):
            raise EventError(
                f"stream '{sid}': an event must be a (timestamp, row) pair, got {event!r}"
            ) from None
        if ts is None:
            ts = default_ts
        elif isinstance(ts, bool) or not isinstance(ts, int):
            if isinstance(ts, float) and ts.is_integer():
                ts = int(ts)
            else:
                raise EventError(
                    f"stream '{sid}': timestamp must be an integer (epoch ms), got {ts!r}"
                )
        if not isinstance(row, (tuple, list)):
            raise EventError(
                f"stream '{sid}': the data must be a list of {self.n} values, "
                f"got {type(row).__name__}"
            )
        if len(row) != self.n:
            raise EventError(
                f"stream '{sid}' has {self.n} attributes "
                f"({', '.join(self.names)}), the event has {len(row)} values"
            )
        out = []
        for name, t, v in zip(self.names, self.types, row):
            try:
                out.append(_convert(v, t))
            except (ValueError, OverflowError) as exc:  # OverflowError: int too big for double
                raise EventError(f"stream '{sid}', attribute '{name}' ({t}): {exc}") from None
        return ts, tuple(out), 0
