"""min/max over a sliding window (no group by) for the sliding kernel (sliding.py).

The row loop keeps a monotonic deque per aggregator and, as Siddhi 3 does, removes an expired
value by its first occurrence in that deque. While all values in the window and the batch are
distinct and none is NaN, that deque is exactly the window's strict suffix extremes (an
expired value is either the deque's head or absent), so each arrival's answer is the extreme
of its window range: a sparse table (log2 levels of pairwise extremes) answers every range at
once. Equal values (Siddhi's first-occurrence removal can then drop the wrong one), NaN,
nulls, or a deque that is not that function of the window (left by such values earlier) make
the kernel decline: the row loop runs the batch."""

from collections import deque
from typing import Any, Optional

import numpy as np

Array = Any


def suffix_extremes(w: Array, kind: str) -> list[Any]:
    """The row loop's deque for window values `w` (distinct, no NaN), oldest first."""
    if not len(w):
        return []
    op = np.maximum if kind == "max" else np.minimum
    run = op.accumulate(w[::-1])[::-1]
    return w[w == run].tolist()


def usable(values: Array, dq: Any, m: int, kind: str) -> bool:
    """Whether the kernel is exact here: `values` (the window's m values, then the batch's)
    distinct and not NaN, and the state's deque `dq` the window's suffix extremes."""
    if values.dtype.kind == "f" and bool(np.isnan(values).any()):
        return False
    if len(np.unique(values)) != len(values):
        return False
    return list(dq) == suffix_extremes(values[:m], kind)


def range_extremes(values: Array, lo: Array, hi: Array, kind: str) -> Array:
    """The extreme of values[lo[i] : hi[i] + 1] for each i (lo <= hi)."""
    op = np.maximum if kind == "max" else np.minimum
    length = hi - lo + 1
    level = np.zeros(len(lo), np.intp)
    if len(length):
        level = np.floor(np.log2(length)).astype(np.intp)
        # log2 of a power of two may round below it: fix the level so 2**level <= length
        level -= (1 << level) > length
        level += (1 << (level + 1)) <= length
    out = np.empty(len(lo), values.dtype)
    table = values
    top = int(level.max()) if len(level) else 0
    for k in range(top + 1):
        if k:
            half = 1 << (k - 1)
            table = op(table[:-half], table[half:])
        at = np.flatnonzero(level == k)
        if len(at):
            span = 1 << k
            out[at] = op(table[lo[at]], table[hi[at] - span + 1])
    return out


class Extremes:
    """The min/max slots of an ungrouped sliding kernel: `{slot: (kind, attribute)}`."""

    def __init__(self, slots: dict[int, tuple[str, int]]) -> None:
        self.slots = slots

    def run(self, state: Any, win: Any, cols: Any, e: Array) -> Optional[dict[int, Any]]:
        """Per slot (each arrival's answer, the final deque), or None to decline. `e[i]`:
        window+batch events expired once arrival i has expired its share."""
        m, b = len(win), len(cols)
        out = {}
        for slot, (kind, i) in self.slots.items():
            values = self._values(win, cols, i, m)
            if values is None or not usable(values, state[slot], m, kind):
                return None
            pos = m + np.arange(b)
            ans = range_extremes(values, e.astype(np.intp), pos, kind)
            end = int(e[-1]) if b else 0
            out[slot] = (ans, suffix_extremes(values[end:], kind))
        return out

    def expire(self, state: Any, win: Any, k: int) -> Optional[dict[int, list[Any]]]:
        """The deques once the k oldest events left, or None to decline."""
        m = len(win)
        out = {}
        for slot, (kind, i) in self.slots.items():
            values, nulls = win.head_column(i, m)
            if values is None or nulls is not None or not usable(values, state[slot], m, kind):
                return None
            out[slot] = suffix_extremes(values[k:], kind)
        return out

    @staticmethod
    def _values(win: Any, cols: Any, i: int, m: int) -> Optional[Array]:
        if cols.nulls[i] is not None:
            return None
        v = cols.values[i]
        if not m:
            return v
        hv, hm = win.head_column(i, m)
        if hm is not None:
            return None
        return np.concatenate([hv, v])

    @staticmethod
    def store(state: Any, finals: dict[int, list[Any]]) -> None:
        for slot, items in finals.items():
            dq = state[slot]
            if isinstance(dq, deque):
                dq.clear()
                dq.extend(items)
            else:
                state[slot] = deque(items)
