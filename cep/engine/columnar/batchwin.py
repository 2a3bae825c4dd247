"""The kernel of a batch window (`lengthBatch(n)`, `externalTimeBatch(attr, T)`) heading its
query's chain and feeding an ungrouped aggregating selector: sum, avg and count of plain
numeric attributes, and plain attributes (the flush's last event's).

The row path emits, per flush, the previous batch as EXPIRED events, a RESET, then the new
batch; the selector (batch mode) subtracts the expired events, resets its slots and adds the
new batch's events, and outputs one row, the last event's, with the aggregates after it. So
each flush's output depends only on its own events: the kernel finds where the flushes fall
(lengthBatch: every n events; externalTimeBatch: where the attribute's running maximum enters
a later period), and computes each flush's values with the additions the row loop performs, in
its order (`np.add.accumulate` along a (flushes x events) matrix, from the reset value).

Exactness: the reset of a sum's slot is `S = S * 0`, so its start is -0.0 or NaN when the
sum minus the expired events is negative or not finite; the kernel takes a batch with such a
sum only when that cannot change the result (finite non-zero values that cannot overflow, and a
start that is not NaN); an average's sum restarts from 0.0 whatever came before. A batch the
kernel does not take in full (a null, a non-finite value under such a sum, a period boundary it
cannot place, an `externalTimeBatch` with a timeout) runs the row loop before any state
changes.

The window's pending events (the current batch, and the last flushed one that the next flush
expires) stay as the kernel's columns until a row batch, a timer or a snapshot needs them as
rows (`BatchWindow.lazy`)."""

from operator import itemgetter
from typing import Any, Optional

import numpy as np

from cep.engine.columnar import segscan
from cep.engine.columnar.adaptive import RowsThroughKernel
from cep.engine.columnar.columns import DTYPES, Columns
from cep.engine.columnar.stateless import emit
from cep.engine.events import CURRENT
from cep.model import AttrType

_FLOATS = (AttrType.DOUBLE, AttrType.FLOAT)
_INTS = (AttrType.INT, AttrType.LONG)
_EXACT_INT = 1 << 53  # larger integers do not all convert to a double exactly
_NO_OVERFLOW = 1e300  # a bound on |sum| under which no running sum reaches infinity


def _attr(src: str) -> Optional[int]:
    if src.startswith("r[") and src.endswith("]") and src[2:-1].isdigit():
        return int(src[2:-1])
    return None


def batch_plan(
    sel: Any, window: Any, ext: Optional[int], definition: Any
) -> Optional[dict[str, Any]]:
    """What the kernel computes for selector `sel` after batch window `window` over stream
    `definition` (`ext`: the externalTimeBatch attribute's index), or None when it does not
    apply exactly."""
    from cep.engine.windows.batch import ExternalTimeBatchWindow, LengthBatchWindow

    code = sel.code
    c = getattr(code.fn, "aggcode", None)
    if (
        c is None
        or not code.batch_mode
        or code.order_by
        or code.limit is not None
        or c.grouped
        or c.hv is not None
        or c.wanted != {CURRENT}
        or c.population is not None
    ):
        return None
    if type(window) is ExternalTimeBatchWindow:
        if ext is None or window.timeout is not None:
            return None
    elif type(window) is not LengthBatchWindow:
        return None
    avg_slots = {a.slots[0] for a in c.aggs if a.spec.name == "avg"}
    aggs = []
    for a in c.aggs:
        name = a.spec.name
        arg = _attr(a.arg.source) if a.arg is not None else None
        if name == "count":
            aggs.append(("count", None, a.slots))
        elif name in ("sum", "avg") and arg is not None and a.type in _FLOATS + _INTS:
            if name == "avg":
                kind = "avg"
            elif a.type in _INTS:
                kind = "isum"
            else:  # a sum sharing an average's slot restarts from 0.0 like the average
                kind = "fsum" if a.slots[0] in avg_slots else "fsum0"
            aggs.append((kind, arg, a.slots))
        else:
            return None
    outs = []
    for x in c.compiled:
        i = _attr(x.source)
        if i is not None:
            outs.append(("attr", i))
            continue
        if not x.source.startswith("_a") or not x.source[2:].isdigit():
            return None
        outs.append(("agg", int(x.source[2:])))
    types = [a.type for a in definition.attributes]
    cols = sorted({a for _, a, _ in aggs if a is not None} | {i for w, i in outs if w == "attr"})
    return {
        "aggs": aggs,
        "outs": outs,
        "cols": cols,
        "arg_types": {a: types[a] for _, a, _ in aggs if a is not None},
        "out_types": [x.type for x in c.compiled],
    }


class _Pending:
    """Events of the window held by the kernel: the rows they become (`parts`: lists of
    events or Columns) and the kernel's columns of them (`ts`, `vals`)."""

    __slots__ = ("parts", "ts", "vals")

    def __init__(self, parts: list[Any], ts: Any, vals: dict[int, Any]) -> None:
        self.parts, self.ts, self.vals = parts, ts, vals

    def __len__(self) -> int:
        return len(self.ts)

    def rows(self) -> list[Any]:
        out: list[Any] = []
        for p in self.parts:
            out.extend(p if isinstance(p, list) else p.events())
        return out


class BatchKernel:
    """Installed on the window (see `install`): `process_columns` for columnar batches, and
    row batches through `rows_kernel` when that measures faster (cep.engine.columnar.adaptive).
    The window's own loop runs whatever the kernel declines."""

    def __init__(
        self,
        window: Any,
        sel: Any,
        plan: dict[str, Any],
        ext: Optional[int],
        definition: Any,
        target: str,
    ) -> None:
        from cep.engine.windows.batch import LengthBatchWindow

        self.w, self.sel, self.plan, self.ext = window, sel, plan, ext
        self.length = type(window) is LengthBatchWindow
        self.cols = list(plan["cols"]) + (
            [ext] if ext is not None and ext not in plan["cols"] else []
        )
        self.types = {i: definition.attributes[i].type for i in self.cols}
        self.out_def = sel.code.output_definition(target)
        self.cur: Optional[_Pending] = None  # the window's cur/prev while it is lazy
        self.prev: Optional[_Pending] = None

    # -- the window's rows while the kernel holds its events --
    def materialise(self, w: Any) -> None:
        w.cur = self.cur.rows() if self.cur is not None else []
        w.prev = self.prev.rows() if self.prev is not None else []
        self.cur = self.prev = None
        w.lazy = None

    def _pending_of_rows(self, events: list[Any]) -> Optional[_Pending]:
        ts = np.fromiter(map(itemgetter(0), events), np.int64, len(events))
        vals = self._row_columns([e[1] for e in events])
        return None if vals is None else _Pending([list(events)], ts, vals)

    def _row_columns(self, rows: list[Any]) -> Optional[dict[int, Any]]:
        """The kernel's columns of rows (None: a null among them)."""
        out = {}
        for i in self.cols:
            col = list(map(itemgetter(i), rows))
            t = self.types[i]
            if t in _FLOATS:
                if None in col:
                    return None
                out[i] = np.array(col, np.float64)
            elif t in _INTS:
                try:
                    out[i] = np.array(col, np.int64)
                except (TypeError, OverflowError):
                    return None
            else:
                if None in col:
                    return None
                a = np.empty(len(col), object)
                a[:] = col
                out[i] = a
        return out

    def _state(self) -> Optional[tuple[_Pending, _Pending]]:
        w = self.w
        if w.lazy is self:
            cur, prev = self.cur, self.prev
        else:
            if w.was_probed:
                return None
            cur, prev = self._pending_of_rows(w.cur), self._pending_of_rows(w.prev)
        if cur is None or prev is None:
            return None
        return cur, prev

    # -- entries --
    def process_columns(self, cols: Columns) -> None:
        w = self.w
        vals = {}
        for i in self.cols:
            if cols.nulls[i] is not None:
                vals = None
                break
            vals[i] = cols.values[i]
        if vals is None or not self._run(cols.timestamps, vals, cols, True):
            _row_loop(w, cols.events())

    def rows_kernel(self, batch: list[Any]) -> None:
        """A row batch (a junction's: CURRENT events only, as the window's head gets)."""
        if not batch:
            return
        ts = np.fromiter(map(itemgetter(0), batch), np.int64, len(batch))
        vals = self._row_columns([e[1] for e in batch])
        if vals is None or not self._run(ts, vals, batch, False):
            _row_loop(self.w, batch)

    # -- the kernel --
    def _run(self, ts: Any, vals: dict[int, Any], src: Any, columnar: bool) -> bool:
        st = self._state()
        if st is None:
            return False
        cur, prev = st
        w, b, c0 = self.w, len(ts), len(cur)
        if not b:
            return True
        all_ts = np.concatenate([cur.ts, ts]) if c0 else ts
        data = {i: (np.concatenate([cur.vals[i], v]) if c0 else v) for i, v in vals.items()}
        cuts = self._cuts(ts, vals, c0, w)  # (segment starts, flush clock, new end) or None
        if cuts is None:
            return False
        starts, nows, end = cuts
        k = len(starts) - 1  # flushes: segments [starts[j], starts[j+1])
        res = self._values(data, starts, prev) if k else ([], {})
        if res is None:
            return False
        outs, slots = res
        # -- commit: nothing below declines --
        if end is not None:
            w.end = end
        if k:
            last = starts[1:] - 1
            self._emit(last, all_ts, data, outs, nows, columnar)
            for slot, v in slots.items():
                self.sel.state[slot] = v
            w.was_probed = False
        tail = int(starts[-1]) if k else 0
        new_cur = self._slice(cur, src, columnar, c0, all_ts, data, tail, c0 + b)
        if k:
            self.prev = self._slice(
                cur, src, columnar, c0, all_ts, data, int(starts[-2]), int(starts[-1])
            )
        elif w.lazy is not self:
            self.prev = prev
        self.cur = new_cur
        w.lazy = self
        return True

    def _slice(self, cur, src, columnar, c0, all_ts, data, a, b) -> _Pending:
        """The pending events at combined positions [a, b) (the window's cur, then the batch)."""
        parts: list[Any] = []
        if a < c0:  # from the window's pending events
            parts.extend(_cut_parts(cur.parts, a, min(b, c0)))
        if b > c0:
            x, y = max(a, c0) - c0, b - c0
            if columnar:  # a copy: the caller may reuse its arrays
                part = src.take(slice(x, y))
                part = Columns(
                    part.definition,
                    part.timestamps.copy(),
                    [v.copy() for v in part.values],
                    [None if m is None else m.copy() for m in part.nulls],
                )
                parts.append(part)
            else:
                parts.append(src[x:y])
        return _Pending(parts, all_ts[a:b].copy(), {i: v[a:b].copy() for i, v in data.items()})

    def _cuts(self, ts, vals, c0, w):
        """(start of each segment in the combined positions, the flush clock of each flush,
        the window's new `end` or None): segment j < last is flushed."""
        b = len(ts)
        if self.length:
            n = w.n
            total = c0 + b
            k = total // n
            starts = np.arange(k + 1, dtype=np.intp) * n  # the tail starts at k * n
            if w.env.playback:
                clock = w.clock()
                run = np.maximum.accumulate(np.maximum(ts, clock))
                nows = run[starts[1:] - 1 - c0] if k else run[:0]
            else:
                nows = np.full(k, w.clock(), np.int64)
            return starts, nows, None
        ext = vals[self.ext].astype(np.int64, copy=False)
        t = w.t
        end = w.end
        if end is None:
            x0 = int(ext[0])
            base = x0 if w.start is None else (w.start + ((x0 - w.start) // t) * t)
            end = base + t
        elif c0 == 0:
            return None  # a window with an end keeps at least the event that set it
        with np.errstate(all="ignore"):
            # the running maximum of the attribute, from `end - 1` (no flush yet)
            run = np.maximum.accumulate(np.maximum(ext, end - 1))
            bucket = (run - end) // t
            prev_bucket = np.concatenate([[-1], bucket[:-1]])
            flush = np.flatnonzero(((ext - end) // t) > prev_bucket)
        if w.end is None and len(flush) and flush[0] == 0:
            flush = flush[1:]
        new_end = end + t * (int(bucket[-1]) + 1)
        starts = np.concatenate([[0], flush + c0]).astype(np.intp)  # the tail starts last
        nows = ext[flush]
        return starts, nows, new_end

    def _values(self, data, starts, prev):
        """({agg index: value per flush}, {slot: value after the last flush}), or None."""
        k = len(starts) - 1
        lens = np.diff(starts)[:k]
        outs: dict[int, Any] = {}
        slots: dict[int, Any] = {}
        lay = None
        lastseg = slice(int(starts[k - 1]), int(starts[k]))
        for j, (kind, arg, sl) in enumerate(self.plan["aggs"]):
            if kind == "count":
                outs[j] = lens.astype(np.int64)
                slots[sl[0]] = int(lens[-1])
                continue
            x = data[arg][: starts[k]]
            if kind == "isum":
                x = x.astype(np.int64, copy=False)
                with np.errstate(all="ignore"):
                    cs = np.concatenate([[0], np.cumsum(x)])
                    outs[j] = cs[starts[1:]] - cs[starts[:-1]]
                slots[sl[0]] = sum(data[arg][lastseg].tolist())
                continue
            if self.plan["arg_types"][arg] in _INTS and bool((np.abs(x) > _EXACT_INT).any()):
                return None
            x = x.astype(np.float64, copy=False)
            if kind == "fsum0":  # the reset leaves (sum - expired) * 0: -0.0 or NaN too
                if not self._zero_start_safe(x, lens, prev, arg, sl[0]):
                    return None
            if self.length:  # flushes of n events each: a (flushes x n) matrix
                mat = np.zeros((k, int(lens[0]) + 1))
                mat[:, 1:] = x.reshape(k, -1)
                with np.errstate(all="ignore"):
                    sums = np.add.accumulate(mat, axis=1)[:, -1]
            else:
                if lay is None:
                    lay = self._layout(starts, k)
                    if lay is None:
                        return None
                with np.errstate(all="ignore"):
                    _, sums = segscan.scan(lay, [0.0] * k, x, -0.0, np.float64)
            if kind == "avg":
                cnt = lens.astype(np.float64)
                outs[j] = sums / cnt
                slots[sl[0]], slots[sl[1]] = float(sums[-1]), int(lens[-1])
            else:
                outs[j] = sums
                slots[sl[0]] = float(sums[-1])
        return outs, slots

    def _zero_start_safe(self, x, lens, prev, arg, slot):
        """Whether every flush's sum is the same from a reset value of 0.0, -0.0 or the
        actual one: finite non-zero values that cannot overflow, and a first start (the
        state minus the expired batch, times 0) that is not NaN."""
        if not len(x):
            return True
        ax = np.abs(x)
        if not (np.isfinite(ax).all() and (ax > 0).all()):
            return False
        if float(ax.max()) * (int(lens.max()) + len(prev) + 1) >= _NO_OVERFLOW:
            return False
        s = self.sel.state[slot]
        if not isinstance(s, float):
            return False
        p = prev.vals[arg].astype(np.float64, copy=False)
        with np.errstate(all="ignore"):
            rest = np.add.accumulate(np.concatenate([[s], -p]))[-1] if len(p) else s
            return not np.isnan(rest * 0.0)

    @staticmethod
    def _layout(starts, k):
        lens = np.diff(starts)[:k]
        codes = np.repeat(np.arange(k, dtype=np.intp), lens)
        return segscan.layout(codes, k, 8 * int(lens.sum()) + 4096)

    def _emit(self, last, all_ts, data, outs, nows, columnar):
        """One output row per flush, the flush's last event's (its timestamp and
        attributes) with the aggregates."""
        out_ts = all_ts[last]
        values = []
        for (what, x), t in zip(self.plan["outs"], self.plan["out_types"]):
            v = data[x][last] if what == "attr" else outs[x]
            values.append(v.astype(DTYPES[t], copy=False) if what == "agg" else v)
        sel = self.sel
        nxt = sel.next
        if _clock_free(nxt):
            if columnar and getattr(nxt, "process_columns", None) is not None:
                values = [
                    v.astype(DTYPES[t], copy=False) for v, t in zip(values, self.plan["out_types"])
                ]
                emit(sel, Columns(self.out_def, out_ts, values, [None] * len(values)))
            else:
                rows = list(zip(*[v.tolist() for v in values]))
                nxt.process(list(zip(out_ts.tolist(), rows, [0] * len(rows))))
            return
        rows = list(zip(*[v.tolist() for v in values]))
        for t, r, now in zip(out_ts.tolist(), rows, nows.tolist()):
            _emit_at(self.w, nxt, now, [(t, r, 0)])


def _row_loop(w: Any, batch: list[Any]) -> None:
    """The window's own loop (its events back as rows first)."""
    if w.lazy is not None:
        w.lazy.materialise(w)
    type(w).process(w, batch)


def _cut_parts(parts: list[Any], a: int, b: int) -> list[Any]:
    """The parts covering positions [a, b) of their concatenation."""
    out, pos = [], 0
    for p in parts:
        n = len(p)
        x, y = max(a, pos), min(b, pos + n)
        if x < y:
            out.append(
                p[x - pos : y - pos] if isinstance(p, list) else p.take(slice(x - pos, y - pos))
            )
        pos += n
    return out


def _clock_free(nxt: Any) -> bool:
    """Whether what follows the selector ignores the plan clock: an insert into a stream
    that only callbacks read (then the flushes' rows may go on together)."""
    from cep.engine.junction import CallbackSink
    from cep.engine.output import InsertIntoStream

    if type(nxt) is not InsertIntoStream:
        return False
    j = nxt.junction
    return not getattr(j, "one_by_one", False) and all(
        type(s) is CallbackSink for s in j.subscribers
    )


def _emit_at(w: Any, nxt: Any, now: int, rows: list[Any]) -> None:
    """`WindowProcessor.emit_at` for the selector's output: the plan clock reads the flush
    time while the row goes downstream."""
    sch = w.env.scheduler
    saved = sch.clock
    if not w.env.playback or saved is None or now <= saved:
        nxt.process(rows)
        return
    sch.set_clock(now)
    try:
        nxt.process(rows)
    finally:
        if sch.clock == now:
            sch.restore_clock(saved)


class _Rows(RowsThroughKernel):
    """Row batches straight into the kernel's row entry (no Columns made)."""

    def __init__(self, definition: Any, rows: Any, kernel: BatchKernel) -> None:
        super().__init__(definition, rows, kernel.process_columns)
        self.kernel_rows = kernel.rows_kernel

    def _through_columns(self, batch: Any) -> None:
        self._inside = True
        try:
            self.kernel_rows(batch)
        finally:
            self._inside = False


def install(window: Any, sel: Any, definition: Any, target: str, ext: Optional[int]) -> bool:
    """Give a chain-head batch window its kernel when it applies; -> whether it did."""
    plan = batch_plan(sel, window, ext, definition)
    if plan is None:
        return False
    kernel = BatchKernel(window, sel, plan, ext, definition, target)
    window.process_columns = kernel.process_columns

    window.process = _Rows(definition, lambda batch: _row_loop(window, batch), kernel)
    return True
