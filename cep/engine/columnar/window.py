"""The events of a sliding window kept as columnar chunks (while columnar batches feed a
window-fused selector): no per-event tuples; turned back into the row window's `(ts, row, 0)`
events when a row batch, a timer or a snapshot needs them."""

from collections import deque

import numpy as np

from cep.engine.columnar.columns import Columns, concat


class ColumnarWindow:
    """Chunks of Columns, oldest first; `head` events of the first chunk already left."""

    def __init__(self, definition):
        self.definition = definition
        self.chunks = deque()
        self.head = 0
        self.size = 0
        self.last_ts = None  # the newest event's timestamp
        self.sorted = True  # timestamps never decrease from the oldest to the newest

    def __len__(self):
        return self.size

    @classmethod
    def from_events(cls, definition, events):
        w = cls(definition)
        if events:
            w.append(Columns.from_events(definition, list(events)))
        return w

    def append(self, cols):
        if not len(cols):
            return
        ts = cols.timestamps
        if self.sorted and (
            len(ts) > 1
            and bool((ts[1:] < ts[:-1]).any())
            or self.last_ts is not None
            and ts[0] < self.last_ts
        ):
            self.sorted = False
        self.last_ts = int(ts[-1])
        # copies: the caller may reuse its arrays once send_columns returns
        self.chunks.append(
            Columns(
                cols.definition,
                ts.copy(),
                [v.copy() for v in cols.values],
                [None if m is None else m.copy() for m in cols.nulls],
            )
        )
        self.size += len(cols)

    def first_ts(self):
        return int(self.chunks[0].timestamps[self.head])

    def drop(self, k):
        """Forget the k oldest events."""
        self.size -= k
        k += self.head
        while self.chunks and k >= len(self.chunks[0]):
            k -= len(self.chunks.popleft())
        self.head = k
        if not self.chunks:
            self.last_ts = None
            self.sorted = True

    def _parts(self, k):
        """Slices of the chunks covering the k oldest events."""
        out, start = [], self.head
        for c in self.chunks:
            if k <= 0:
                break
            end = min(len(c), start + k)
            out.append((c, start, end))
            k -= end - start
            start = 0
        return out

    def head_ts(self, k):
        parts = self._parts(k)
        if not parts:
            return np.empty(0, np.int64)
        return np.concatenate([c.timestamps[a:b] for c, a, b in parts])

    def head_column(self, i, k):
        """(values, nulls or None) of attribute i over the k oldest events."""
        parts = self._parts(k)
        if not parts:
            return None, None
        vals = [c.values[i][a:b] for c, a, b in parts]
        ms = [c.nulls[i] for c, _, _ in parts]
        v = vals[0] if len(vals) == 1 else np.concatenate(vals)
        if all(m is None for m in ms):
            return v, None
        return v, np.concatenate(
            [np.zeros(b - a, bool) if m is None else m[a:b] for m, (c, a, b) in zip(ms, parts)]
        )

    def count_le(self, lim):
        """How many of the oldest events have a timestamp <= lim (the window is sorted)."""
        n, start = 0, self.head
        for c in self.chunks:
            ts = c.timestamps
            if ts[-1] <= lim:
                n += len(c) - start
            else:
                n += int(np.searchsorted(ts[start:], lim, "right"))
                break
            start = 0
        return n

    def events(self):
        """The window as the row window's deque items `(ts, row, 0)`, oldest first."""
        parts = [c.take(slice(a, b)) for c, a, b in self._parts(self.size)]
        if not parts:
            return []
        return concat(self.definition, parts).events()
