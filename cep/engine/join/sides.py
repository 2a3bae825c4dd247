"""The two inputs of a join: a stream side (its window, or none) and what the window holds.

A stream side's window is an ordinary `cep.engine.windows` processor, so every window Siddhi
accepts on a join side works there with the single-stream semantics (length, time, batch
windows, unique, firstUnique, sort, externalTime, externalTimeBatch, frequent, ...). What the
window emits (expired rows first, stamped with the plan clock; a batch window's flush; timer
expiries) goes to the join processor, which keeps `Contents` in step (CURRENT rows enter,
EXPIRED rows leave, a RESET starts a new batch) and probes the other side with each row.

A side without a window is Siddhi 3's `length(0)`: each event passes as CURRENT and then at
once as EXPIRED (so aggregates over a windowless side count only the triggering event's rows),
and nothing is kept.

`candidates(key)` are the rows a probe from the other side looks at, in window order: with a
`key` function (from an equality in the `on` condition) only the rows with that key, from a
dict of deques.
"""

from collections import deque

from cep.errors import SnapshotError

CURRENT, EXPIRED, RESET = 0, 1, 2


class Contents:
    """The rows a side's window holds, in window order; by key when the side is indexed."""

    def __init__(self, key=None):
        self.key = key
        self.rows = deque() if key is None else None
        self.index = {} if key is not None else None

    def add(self, row):
        if self.index is None:
            self.rows.append(row)
            return
        k = self.key(row)
        bucket = self.index.get(k)
        if bucket is None:
            self.index[k] = deque((row,))
        else:
            bucket.append(row)

    def remove(self, row):
        """Take `row` out: O(1) for the oldest row (FIFO windows), else a scan. A row the
        contents do not hold is ignored."""
        if self.index is None:
            take_row(self.rows, row)
            return
        k = self.key(row)
        bucket = self.index.get(k)
        if bucket is not None:
            take_row(bucket, row)
            if not bucket:
                del self.index[k]

    def clear(self):
        if self.index is None:
            self.rows.clear()
        else:
            self.index.clear()

    def candidates(self, key_value=None, use_key=False):
        if self.index is None:
            return self.rows
        if use_key:
            return self.index.get(key_value, ())
        return [r for bucket in self.index.values() for r in bucket]

    def get_state(self):
        return list(self.candidates())

    def set_state(self, rows):
        self.clear()
        for r in rows:
            self.add(r)


def take_row(dq, row):
    if dq and (dq[0] is row or dq[0] == row):
        dq.popleft()
        return
    try:
        dq.remove(row)
    except ValueError:
        pass


class StreamSide:
    """A stream side of a join: `window` (a WindowProcessor whose output the join receives,
    or None) and the `contents` a probe from the other side looks at."""

    def __init__(self, window=None, key=None):
        self.window = window
        self.contents = Contents(key)
        self.key = key

    def attach(self, sink):
        """Send the window's output (arrivals, flushes, timer expiries) to `sink`."""
        if self.window is not None:
            self.window.next = sink

    def passing(self, batch, expire):
        """No window: each event as CURRENT, then (when `expire`) at once as EXPIRED."""
        if not expire:
            return [(ts, row, CURRENT) for ts, row, kind in batch if not kind]
        out = []
        for ts, row, kind in batch:
            if not kind:
                out.append((ts, row, CURRENT))
                out.append((ts, row, EXPIRED))
        return out

    def candidates(self, key_value=None, use_key=False):
        ordered = getattr(self.window, "join_rows", None)
        if ordered is not None:  # a window whose own order a probe follows (sort)
            rows = ordered()
            if use_key and self.key is not None:
                return [r for r in rows if self.key(r) == key_value]
            return rows
        return self.contents.candidates(key_value, use_key)

    def get_state(self):
        w = self.window.get_state() if self.window is not None else None
        return {"window": w, "rows": self.contents.get_state()}

    def set_state(self, state):
        if not isinstance(state, dict) or "rows" not in state:
            raise SnapshotError(
                "the snapshot holds a join side in the format of an earlier "
                "engine (before join sides ran window processors); take a "
                "new snapshot"
            )
        if self.window is not None:
            self.window.set_state(state["window"])  # re-registers its timers
        self.contents.set_state(state["rows"])

    def fresh(self):
        """An empty side with the same configuration (compiled code shared)."""
        return StreamSide(self.window.clone() if self.window is not None else None, self.key)


class NamedWindowSide(StreamSide):
    """A join side reading a named window: probes look into the shared window's rows (the
    window keeps them), and what the window emits arrives as it is (CURRENT and EXPIRED)."""

    named = True

    def __init__(self, junction, key=None):
        super().__init__(None, key)
        self.junction = junction

    def candidates(self, key_value=None, use_key=False):
        return self.junction.candidates(self.key if use_key else None, key_value)

    def get_state(self):
        return None  # the named window snapshots itself

    def set_state(self, state):
        pass

    def fresh(self):
        return self


class SideSink:
    """Where a side's window emits: the join processor, tagged with the side."""

    def __init__(self, join, which):
        self.join, self.which = join, which

    def process(self, chunk):
        self.join.window_output(self.which, chunk)
