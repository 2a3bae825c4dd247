"""A keyed task's events as columns: gathered, sorted with numpy, cut into key runs.

The task's Arrow batches (`__ts`, `__seq`, `__s` with several inputs, the key column and the
attributes `c<i>_<j>`) come unsorted from the shuffle; `SortedPartition` puts them in one
table and sorts it by (key, timestamp, input index, row number) on the key's dictionary codes with
numpy (sort_order; faster than Spark's sortWithinPartitions). `view(i)` gives input i's events
as the keyed kernels take them (cep/engine/columnar/keyed): timestamps, key run starts, and
attribute name -> numpy column, or None when a column has nulls (the engine runs then)."""

from collections.abc import Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


class SortedPartition:
    """One task's events sorted by (key, timestamp, input, row); `codes` are the sorted rows'
    key codes (one integer per distinct key), `streams` their input indices."""

    def __init__(self, batches, key_column, inputs):
        table = pa.Table.from_batches(batches).combine_chunks()
        self.inputs = inputs  # (stream id, number of attributes) per input index
        _check_strings(table, inputs)
        codes = _codes(table.column(key_column))
        ts = table.column("__ts").to_numpy()
        seq = table.column("__seq").to_numpy()
        streams = table.column("__s").to_numpy() if "__s" in table.column_names else None
        order = sort_order(codes, ts, seq, streams)
        self.streams = None if streams is None else streams[order]
        self.table, self.order, self.codes = table, order, codes[order]
        self.ts = ts[order]
        self.n = len(order)

    def rows_of(self, index):
        """Positions (in sorted order) of input `index`'s events."""
        if self.streams is None:
            return None if index == 0 else np.empty(0, np.intp)
        return np.flatnonzero(self.streams == index)

    def view(self, index, attributes):
        """(ts, starts, columns) of input `index` (model Attributes), or None with nulls."""
        rows = self.rows_of(index)
        take = self.order if rows is None else self.order[rows]
        names = [f"c{index}_{j}" for j in range(len(attributes))]
        part = self.table.select(names).take(pa.array(take))
        if any(part.column(c).null_count for c in names):
            return None
        codes = self.codes if rows is None else self.codes[rows]
        ts = self.ts if rows is None else self.ts[rows]
        starts = run_starts(codes)
        cols = LazyColumns({a.name: part.column(c) for a, c in zip(attributes, names)})
        return ts, starts, cols

    def key_runs(self):
        """Start indices of each key's run (sorted positions), plus n at the end."""
        return run_starts(self.codes)

    def sorted_rows(self, indices):
        """(Arrow table, key codes, input indices or None) of the sorted events of the
        inputs `indices`."""
        take, codes, streams = self.order, self.codes, self.streams
        if streams is not None and len(indices) < len(self.inputs):
            keep = np.isin(streams, list(indices))
            take, codes, streams = take[keep], codes[keep], streams[keep]
        return self.table.take(pa.array(take)), codes, streams


class LazyColumns(Mapping):
    """attribute name -> numpy column, converted from Arrow on first use (strings through
    their dictionary: one Python object per distinct value, not per row)."""

    def __init__(self, arrow_columns):
        self._arrow, self._done = arrow_columns, {}

    def __getitem__(self, name):
        if name not in self._done:
            self._done[name] = to_numpy(self._arrow[name])
        return self._done[name]

    def __iter__(self):
        return iter(self._arrow)

    def __len__(self):
        return len(self._arrow)


def to_numpy(column):
    """An Arrow column without nulls as numpy (strings: an object array)."""
    column = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
        encoded = pc.dictionary_encode(column)
        values = encoded.dictionary.to_numpy(zero_copy_only=False)
        return values[encoded.indices.to_numpy()]
    return column.to_numpy(zero_copy_only=False)


def run_starts(codes):
    """Each run's first index in `codes` (sorted by key), plus len(codes) at the end."""
    n = len(codes)
    if not n:
        return np.zeros(1, np.intp)
    inner = np.flatnonzero(codes[1:] != codes[:-1]) + 1
    return np.concatenate(([0], inner, [n])).astype(np.intp)


def _check_strings(table, inputs):
    """Strings that are not UTF-8 fail the task (the engine decodes every value; a kernel may
    pass bytes through unread)."""
    for name, column in zip(table.column_names, table.columns):
        if pa.types.is_string(column.type) and name.startswith("c"):
            try:
                column.validate(full=True)
            except pa.ArrowInvalid as exc:
                i, j = (int(x) for x in name[1:].split("_"))
                raise ValueError(
                    f"attribute {j + 1} of input {inputs[i][0]} is not valid UTF-8: {exc}"
                ) from None


def sort_order(codes, ts, seq, streams=None):
    """The permutation sorting rows by (key code, timestamp, input index, row number). When
    (code, timestamp) pairs are unique, one quicksort of them packed into an int64 (4-9 times
    faster than np.lexsort); else lexsort with the tie-breaks."""
    if len(ts):
        lo, span = int(ts.min()), int(ts.max()) - int(ts.min()) + 1
        if span * (int(codes.max()) + 2) < 2**62:
            packed = (codes + 1).astype(np.int64) * span + (ts - lo)
            order = np.argsort(packed)
            packed = packed[order]
            if not (packed[1:] == packed[:-1]).any():
                return order
    if streams is None:
        return np.lexsort((seq, ts, codes))
    return np.lexsort((seq, streams, ts, codes))


def _codes(column):
    """One integer per distinct key value (nulls: -1), from 0 in order of first appearance."""
    column = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    encoded = pc.dictionary_encode(column)
    return encoded.indices.fill_null(-1).to_numpy().astype(np.int64)
