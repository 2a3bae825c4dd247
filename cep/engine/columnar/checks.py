"""Checking columnar input against a stream definition: one numpy/pyarrow operation per
column, not per value.

A column is a numpy array (a masked array for nulls), a pyarrow array (its nulls are nulls)
or a Python sequence (None for null). What each attribute type accepts:
- DOUBLE: float and integer dtypes (integers converted as `int` to `double` in Java);
- FLOAT: float32; float64 and integers are rounded to 32 bits (as the row path does);
- INT / LONG: integer dtypes; values outside the 32/64-bit range reject their events;
- BOOL: bool; STRING: str values (object or unicode arrays, pyarrow strings); OBJECT: any.
A column of another dtype (floats for a long, numbers for a string) raises EventError for the
whole batch: nothing of it is processed. A bad value (out of range, a non-str in an object
column of strings) rejects only its event, returned as `(index, EventError)` as `send_batch`
does."""

from collections.abc import Mapping

import numpy as np

from cep.engine import javamath
from cep.engine.columnar.columns import DTYPES, Columns
from cep.errors import EventError
from cep.model import AttrType

try:
    import pyarrow as pa
except ImportError:  # pragma: no cover - pyarrow comes with setup.cfg
    pa = None

_RANGE = {
    AttrType.INT: (javamath.INT_MIN, javamath.INT_MAX),
    AttrType.LONG: (javamath.LONG_MIN, javamath.LONG_MAX),
}
_KINDS = {  # numpy dtype kinds each attribute type accepts
    AttrType.DOUBLE: "fiu",
    AttrType.FLOAT: "fiu",
    AttrType.INT: "iu",
    AttrType.LONG: "iu",
    AttrType.BOOL: "b",
    AttrType.STRING: "UO",
    AttrType.OBJECT: "O",
}
_PY = {
    AttrType.DOUBLE: (float, int),
    AttrType.FLOAT: (float, int),
    AttrType.INT: (int,),
    AttrType.LONG: (int,),
    AttrType.BOOL: (bool,),
    AttrType.STRING: (str,),
}


def mapping_of(data):
    """{name: column} of a mapping, a pyarrow RecordBatch/Table or a pandas DataFrame."""
    if isinstance(data, Mapping):
        return data
    names = getattr(data, "column_names", None)  # pyarrow
    if names is not None:
        return {n: data.column(n) for n in names}
    cols = getattr(data, "columns", None)  # pandas
    if cols is not None:
        return {str(n): data[n].to_numpy() for n in cols}
    raise EventError(
        f"columns must be a mapping of attribute name to column, a pyarrow "
        f"RecordBatch/Table or a DataFrame, got {type(data).__name__}"
    )


def coerce_columns(definition, data, timestamps, default_ts):
    """-> (Columns of the good events, [(index, EventError)]); raises EventError when the
    batch as a whole does not fit (names, lengths, a column's dtype)."""
    sid = definition.id
    data = mapping_of(data)
    names = [a.name for a in definition.attributes]
    missing = [n for n in names if n not in data]
    extra = [str(n) for n in data if n not in names]
    if missing or extra:
        raise EventError(
            f"stream '{sid}' has attributes ({', '.join(names)}); the columns "
            f"{'lack ' + ', '.join(missing) if missing else ''}"
            f"{'; ' if missing and extra else ''}"
            f"{'have unknown ' + ', '.join(extra) if extra else ''}"
        )
    values, nulls, bad, reasons = [], [], None, []
    n = None
    for a in definition.attributes:
        v, m, b = _column(sid, a.name, a.type, data[a.name])
        if n is None:
            n = len(v)
        elif len(v) != n:
            raise EventError(
                f"stream '{sid}': column '{a.name}' has {len(v)} values, '{names[0]}' has {n}"
            )
        values.append(v)
        nulls.append(m)
        if b is not None:
            bad = b if bad is None else bad | b
            reasons.append((a, b))
    ts = _timestamps(sid, timestamps, n, default_ts)
    cols = Columns(definition, ts, values, nulls)
    if bad is None:
        return cols, []
    return cols.take(~bad), [
        (int(i), EventError(f"stream '{sid}', {_why(reasons, int(i))}"))
        for i in np.flatnonzero(bad)
    ]


def _timestamps(sid, ts, n, default_ts):
    if ts is None:
        return np.full(n or 0, default_ts, np.int64)
    if pa is not None and isinstance(ts, (pa.Array, pa.ChunkedArray)):
        if ts.null_count:
            raise EventError(f"stream '{sid}': timestamps must not be null")
        ts = ts.to_numpy(zero_copy_only=False)
    arr = np.asarray(ts)
    if arr.size == 0 and arr.ndim == 1:  # an empty list: numpy's float64, no value to check
        arr = arr.astype(np.int64)
    if arr.dtype.kind not in "iu" or arr.ndim != 1:
        raise EventError(
            f"stream '{sid}': timestamps must be integers (epoch ms), got an array of {arr.dtype}"
        )
    if len(arr) != (n or 0):
        raise EventError(f"stream '{sid}': {len(arr)} timestamps for {n} events")
    if arr.dtype.kind == "u" and len(arr) and arr.max() > javamath.LONG_MAX:
        raise EventError(f"stream '{sid}': a timestamp is out of the range of long")
    return arr.astype(np.int64, copy=False)


def _column(sid, name, t, col):
    """(values, nulls or None, bad or None) of one column."""
    nulls = None
    if pa is not None and isinstance(col, (pa.Array, pa.ChunkedArray)):
        if col.null_count:
            nulls = col.is_null().to_numpy(zero_copy_only=False)
            if t in _RANGE or t in (AttrType.DOUBLE, AttrType.FLOAT, AttrType.BOOL):
                col = col.fill_null(False if t == AttrType.BOOL else 0)
        col = col.to_numpy(zero_copy_only=False)
    elif isinstance(col, np.ma.MaskedArray):
        m = np.ma.getmaskarray(col)
        nulls = m if m.any() else None
        col = col.data
    elif not isinstance(col, np.ndarray):
        return _sequence(sid, name, t, list(col))
    if col.ndim != 1:
        raise EventError(f"stream '{sid}', attribute '{name}': a column must be 1-dimensional")
    if col.dtype.kind not in _KINDS[t]:
        raise EventError(
            f"stream '{sid}', attribute '{name}' ({t}): a column of {col.dtype} "
            f"cannot hold {t} values"
        )
    return _typed(t, col, nulls)


def _typed(t, col, nulls):
    """Convert a column whose dtype kind fits t; (values, nulls, bad)."""
    bad = None
    if col.dtype.kind == "O":
        values = col.tolist()
        if t == AttrType.STRING and nulls is None:
            try:  # every value a str (no None): one C pass
                "".join(values)
                return col, None, None
            except TypeError:
                pass
        types = set(map(type, values))
        if nulls is None and type(None) in types:
            nulls = np.fromiter((x is None for x in values), bool, len(values))
        if t == AttrType.STRING and not types <= {str, type(None)}:
            bad = np.fromiter(
                (type(x) is not str and x is not None for x in values), bool, len(values)
            )
        return col, nulls, bad
    if t in _RANGE and len(col):
        lo, hi = _RANGE[t]
        if col.min() < lo or col.max() > hi:
            bad = (col < lo) | (col > hi)
            if nulls is not None:
                bad &= ~nulls
            bad = bad if bad.any() else None
            col = np.where((col < lo) | (col > hi), 0, col)
    with np.errstate(over="ignore"):  # float64 -> float32 overflows to infinity, as Java
        return col.astype(DTYPES[t], copy=False), nulls, bad


def _sequence(sid, name, t, col):
    """A Python sequence: exact value types checked per column (map(type) at C speed)."""
    types = set(map(type, col))
    nulls = None
    if type(None) in types:
        nulls = np.fromiter((x is None for x in col), bool, len(col))
        types.discard(type(None))
    if t == AttrType.OBJECT:
        arr = np.empty(len(col), object)
        arr[:] = col
        return arr, nulls, None
    if not types <= set(_PY[t]):
        bad = np.fromiter((x is not None and type(x) not in _PY[t] for x in col), bool, len(col))
        col = [None if b else x for x, b in zip(col, bad)]
        nulls = np.fromiter((x is None for x in col), bool, len(col))
        values, _, bad2 = _sequence(sid, name, t, col)
        return values, nulls if nulls.any() else None, bad if bad2 is None else bad | bad2
    if t == AttrType.STRING:
        arr = np.empty(len(col), object)
        arr[:] = col
        return arr, nulls, None
    if nulls is not None:
        fill = False if t == AttrType.BOOL else 0
        col = [fill if x is None else x for x in col]
    if t in _RANGE:
        lo, hi = _RANGE[t]
        bad = np.fromiter((not lo <= x <= hi for x in col), bool, len(col))
        if bad.any():
            col = [0 if b else x for x, b in zip(col, bad.tolist())]
            if nulls is not None:
                bad &= ~nulls
            return np.array(col, DTYPES[t]), nulls, bad if bad.any() else None
        return np.array(col, DTYPES[t]), nulls, None
    if t == AttrType.FLOAT:
        return (
            np.array(
                [javamath.f32(x) if type(x) is float else javamath.int_to_f32(x) for x in col],
                np.float32,
            ),
            nulls,
            None,
        )
    return np.array(col, DTYPES[t]), nulls, None


def _why(reasons, i):
    """Why event i was rejected: its first bad attribute."""
    for a, bad in reasons:
        if bad[i]:
            what = "out of the range of" if a.type in _RANGE else "not a value of type"
            return f"event {i}, attribute '{a.name}' ({a.type}): the value is {what} {a.type}"
    return f"event {i}: rejected"
