"""`Columns`: a batch of events of one stream as numpy arrays, what `send_columns` takes in
and what a columnar callback receives.

One array per attribute in definition order (DOUBLE float64, FLOAT float32, INT int32, LONG
int64, BOOL bool, STRING/OBJECT object or numpy unicode), a bool null mask per attribute
(None when the column has no null; the value under a null is meaningless), and int64
timestamps (epoch ms). `to_rows()` gives the row API's `(timestamp, row)` pairs with the
same Python values the row path would carry."""

from itertools import repeat
from operator import itemgetter
from typing import Any, Iterable, Optional, Sequence

import numpy as np

from cep.model import AttrType, StreamDefinition

# a column's values, a null mask (bool) or the timestamps (int64)
Array = np.ndarray[Any, Any]

DTYPES: dict[AttrType, np.dtype[Any]] = {
    AttrType.DOUBLE: np.dtype(np.float64),
    AttrType.FLOAT: np.dtype(np.float32),
    AttrType.INT: np.dtype(np.int32),
    AttrType.LONG: np.dtype(np.int64),
    AttrType.BOOL: np.dtype(np.bool_),
    AttrType.STRING: np.dtype(object),
    AttrType.OBJECT: np.dtype(object),
}
_FIRST, _SECOND = itemgetter(0), itemgetter(1)
_FILL: dict[AttrType, Any] = {
    AttrType.DOUBLE: 0.0,
    AttrType.FLOAT: 0.0,
    AttrType.INT: 0,
    AttrType.LONG: 0,
    AttrType.BOOL: False,
}


def pylist(values: Array, nulls: Optional[Array]) -> list[Any]:
    """A column as a Python list, None where null."""
    out: list[Any] = values.tolist()
    if nulls is not None:
        for i in np.flatnonzero(nulls).tolist():
            out[i] = None
    return out


class Columns:
    """A columnar batch of `definition`'s events; see the module docstring."""

    __slots__ = ("definition", "timestamps", "values", "nulls")

    def __init__(
        self,
        definition: StreamDefinition,
        timestamps: Array,
        values: Iterable[Array],
        nulls: Iterable[Optional[Array]],
    ) -> None:
        self.definition = definition
        self.timestamps, self.values, self.nulls = timestamps, list(values), list(nulls)

    @property
    def names(self) -> list[str]:
        return [a.name for a in self.definition.attributes]

    def __len__(self) -> int:
        return len(self.timestamps)

    def _index(self, name: str) -> int:
        for i, a in enumerate(self.definition.attributes):
            if a.name == name:
                return i
        raise KeyError(f"stream '{self.definition.id}' has no attribute '{name}'")

    def __getitem__(self, name: str) -> Array:
        """The values of attribute `name` (a numpy array; see `null_mask`)."""
        return self.values[self._index(name)]

    def null_mask(self, name: str) -> Optional[Array]:
        """A bool array, True where `name` is null, or None when it has no null."""
        return self.nulls[self._index(name)]

    def column(self, name: str) -> list[Any]:
        """Attribute `name` as a Python list, None for null."""
        i = self._index(name)
        return pylist(self.values[i], self.nulls[i])

    def rows(self) -> list[tuple[Any, ...]]:
        """The rows as tuples of Python values in definition order."""
        n = len(self.timestamps)
        if not self.values:
            return [()] * n
        return list(zip(*[pylist(v, m) for v, m in zip(self.values, self.nulls)]))

    def to_rows(self) -> list[tuple[int, tuple[Any, ...]]]:
        """`[(timestamp, row), ...]`, what a row callback receives."""
        return list(zip(self.timestamps.tolist(), self.rows()))

    def events(self) -> list[tuple[int, tuple[Any, ...], int]]:
        """The engine's CURRENT events `(ts, row, 0)`."""
        return list(zip(self.timestamps.tolist(), self.rows(), repeat(0)))

    def take(self, index: Any) -> "Columns":
        """The events at `index` (a bool mask or integer positions), as Columns."""
        return Columns(
            self.definition,
            self.timestamps[index],
            [v[index] for v in self.values],
            [None if m is None else _mask(m[index]) for m in self.nulls],
        )

    def __repr__(self) -> str:
        return f"<Columns of {self.definition.id}: {len(self)} events>"

    @classmethod
    def from_events(
        cls, definition: StreamDefinition, events: Sequence[tuple[Any, ...]]
    ) -> "Columns":
        """Columns of engine events `(ts, row[, kind])` (rows already of the definition's
        types) or of `(ts, row)` pairs."""
        ts = np.fromiter(map(_FIRST, events), np.int64, len(events))
        rows = list(map(_SECOND, events))
        cols = [list(map(itemgetter(i), rows)) for i in range(len(definition.attributes))]
        values: list[Array] = []
        nulls: list[Optional[Array]] = []
        for a, col in zip(definition.attributes, cols):
            v, m = column_of(col, a.type)
            values.append(v)
            nulls.append(m)
        return cls(definition, ts, values, nulls)


def _mask(m: Array) -> Optional[Array]:
    return m if m.any() else None


def column_of(col: Sequence[Any], t: AttrType) -> tuple[Array, Optional[Array]]:
    """(values, nulls) of a sequence of Python values already of type t (None for null).
    The common case, no null, is found in C: a string column whose values are all truthy, a
    float column without NaN (numpy reads None as NaN), an int column numpy takes whole."""
    dtype = DTYPES[t]
    if dtype.kind == "O":
        values = np.empty(len(col), object)
        values[:] = col
        if (t is AttrType.STRING and all(col)) or None not in col:
            return values, None
        return values, np.array([x is None for x in col], bool)
    if dtype.kind == "f":
        if len(col) < 64:  # numpy's calls cost more than the scan
            if None not in col:
                return np.array(col, dtype), None
        else:
            values = np.fromiter(col, dtype, len(col))  # None reads as NaN: checked below
            if not np.isnan(values).any() or None not in col:
                return values, None
    elif dtype.kind in "iu":
        try:
            return np.array(col, dtype), None
        except TypeError:  # a None among them
            pass
    elif None not in col:
        return np.array(col, dtype), None
    nulls = np.array([x is None for x in col], bool)
    fill = _FILL[t]
    return np.array([fill if x is None else x for x in col], dtype), nulls


def concat(definition: StreamDefinition, parts: Sequence["Columns"]) -> "Columns":
    """One Columns of several (same definition)."""
    if len(parts) == 1:
        return parts[0]
    ts = np.concatenate([p.timestamps for p in parts])
    values: list[Array] = []
    nulls: list[Optional[Array]] = []
    for i in range(len(definition.attributes)):
        values.append(np.concatenate([p.values[i] for p in parts]))
        ms = [p.nulls[i] for p in parts]
        if all(m is None for m in ms):
            nulls.append(None)
        else:
            nulls.append(
                np.concatenate(
                    [np.zeros(len(p), bool) if m is None else m for p, m in zip(parts, ms)]
                )
            )
    return Columns(definition, ts, values, nulls)
