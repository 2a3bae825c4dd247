"""The columnar kernel of a window-fused `length(n)` / `time(T)` (playback) selector with
sum/avg/count [group by]: the same running state, updated in the same order, with numpy.

Per batch: which window events each arrival expires (length: arithmetic; time: a
`searchsorted` of the running clock's limits in the window's sorted timestamps); the
operations in the row loop's order (each arrival's expiries, then the arrival: -x, +x); per
group, a sequential `np.add.accumulate` along the rows of a (groups x operations) matrix
padded with the identity (-0.0, which leaves every float unchanged, or 0), so each running
sum sees exactly the additions and subtractions, in the order, that the row loop performs:
bit-identical doubles, 64-bit wrap for long sums. Batches the kernel does not take (a
window whose timestamps go back, a group that empties and would be forgotten, very skewed
groups) run the row loop (`None` returned before any state changes)."""

import re
from collections import deque
from itertools import repeat
from operator import setitem

import numpy as np

from cep.engine.columnar import segscan
from cep.engine.columnar.columns import DTYPES, Columns, pylist
from cep.engine.columnar.extremes import Extremes
from cep.engine.columnar.stddev import Stddevs
from cep.engine.events import CURRENT
from cep.model import AttrType

_ATTR = re.compile(r"r\[(\d+)\]")
_AGG = re.compile(r"_a(\d+)")
# key types whose values pandas.factorize groups exactly as a dict does (floats do not:
# a dict keeps each NaN object apart, factorize merges them)
_HASHED = (AttrType.STRING, AttrType.INT, AttrType.LONG, AttrType.BOOL)
_GONE = object()  # a group whose last operation emptied it: not stored
_FLOATS = (AttrType.DOUBLE, AttrType.FLOAT)
_NUM = (AttrType.INT, AttrType.LONG, AttrType.FLOAT, AttrType.DOUBLE)


def _attr(src):
    m = _ATTR.fullmatch(src)
    return None if m is None else int(m.group(1))


def sliding_plan(c, spec):
    """The kernel's plan of an AggCode `c`, or None when it does not apply."""
    if (
        c.wanted != {CURRENT}
        or c.hv is not None
        or (spec.kind in ("time", "timelength") and not spec.playback)
    ):
        return None
    slots = {}  # slot -> (kind, attribute index or None)
    extremes = {}  # min/max without group by: slot -> (name, attribute index)
    stddevs = {}  # stddev without group by: its first slot -> attribute index
    for a in c.aggs:
        name = a.spec.name
        arg = None
        if a.arg is not None:
            arg = _attr(a.arg.source)
            if arg is None or a.type not in _NUM:
                return None
        if name == "sum":
            slots[a.slots[0]] = ("fsum" if a.type in _FLOATS else "isum", arg)
        elif name == "avg":
            slots[a.slots[0]], slots[a.slots[1]] = ("fsum", arg), ("cnt", arg)
        elif name == "count":
            slots[a.slots[0]] = ("all", None)
        elif name in ("min", "max") and arg is not None and not c.keys:
            extremes[a.slots[0]] = (name, arg)
        elif name == "stddev" and arg is not None and not c.keys:
            stddevs[a.slots[0]] = arg
        else:
            return None
    if c.population is not None:
        slots.setdefault(c.population, ("all", None))
    keys = [_attr(k.source) for k in c.keys]
    outs = []
    for x in c.compiled:
        i, m = _attr(x.source), _AGG.fullmatch(x.source)
        if i is None and m is None:
            return None
        outs.append(("attr", i) if i is not None else ("agg", c.aggs[int(m.group(1))]))
    if None in keys:
        return None
    return {
        "slots": slots,
        "extremes": extremes,
        "stddevs": stddevs,
        "keys": keys,
        "outs": outs,
        "types": [x.type for x in c.compiled],
        "key_types": [k.type for k in c.keys],
    }


class SlidingKernel:
    """`run(proc, cols, now)` -> output Columns, or None to take the row path instead."""

    MAX_PAD = 8  # matrix cells per operation before the batch takes the row path

    def __init__(self, c, spec, plan, out_def):
        self.c, self.spec, self.out_def = c, spec, out_def
        self.slots, self.keys, self.outs = plan["slots"], plan["keys"], plan["outs"]
        self.dtypes = [DTYPES[t] for t in plan["types"]]
        self.key_types = plan["key_types"]
        self.cols = sorted({a for _, a in self.slots.values() if a is not None} | set(self.keys))
        self.extremes = Extremes(plan["extremes"]) if plan.get("extremes") else None
        sd = plan.get("stddevs")
        self.stddevs = Stddevs(sd, c.g.get("_jsqrt")) if sd else None
        if sd:
            self.cols = sorted(set(self.cols) | set(sd.values()))

    def expiries(self, win, cols, now):
        """e[i]: window+batch events expired once arrival i has expired its share."""
        m, b = len(win), len(cols)
        idx = np.arange(b)
        if self.spec.kind == "length":
            return np.maximum(0, m + idx - self.spec.param + 1)
        if self.spec.kind == "externaltime":
            return self._external_expiries(win, cols)
        ts = cols.timestamps
        if (
            not win.sorted
            or (b > 1 and bool((ts[1:] < ts[:-1]).any()))
            or (win.last_ts is not None and ts[0] < win.last_ts)
        ):
            return None
        lims = np.maximum.accumulate(np.maximum(ts, now)) - self.spec.param
        k = win.count_le(int(lims[-1]))
        cts = win.head_ts(k) if k < m else np.concatenate([win.head_ts(m), ts])
        e = np.minimum(np.searchsorted(cts, lims, "right"), m + idx)
        if self.spec.kind == "timelength":  # then one more when the window is full
            e = np.maximum(e, m + idx - self.spec.extra + 1)
        return e

    def _external_expiries(self, win, cols):
        """externalTime: an arrival expires the oldest events whose time attribute is at or
        below its own minus T; exact by `searchsorted` while the attribute never decreases
        over the window and the batch (else None: the row loop)."""
        i, m, b = self.spec.extra, len(win), len(cols)
        if cols.nulls[i] is not None:
            return None
        ext = cols.values[i].astype(np.int64, copy=False)
        if m:
            hv, hm = win.head_column(i, m)
            if hm is not None:
                return None
            ext = np.concatenate([hv.astype(np.int64, copy=False), ext])
        if len(ext) > 1 and bool((ext[1:] < ext[:-1]).any()):
            return None
        with np.errstate(all="ignore"):
            lims = ext[m:] - self.spec.param
        return np.minimum(np.searchsorted(ext, lims, "right"), m + np.arange(b))

    def run(self, state, win, cols, now):
        e = self.expiries(win, cols, now)
        if e is None:
            return None
        m, b = len(win), len(cols)
        E = int(e[-1]) if b else 0
        h = min(E, m)
        data = {}
        for i in self.cols:
            hv, hm = win.head_column(i, h)
            v, nl = cols.values[i], cols.nulls[i]
            if h:
                nl = (
                    None
                    if hm is None and nl is None
                    else np.concatenate(
                        [
                            np.zeros(h, bool) if hm is None else hm,
                            np.zeros(b, bool) if nl is None else nl,
                        ]
                    )
                )
                v = np.concatenate([hv, v])
            data[i] = (v, nl)
        nops = E + b
        arrive = e + np.arange(b)  # the op index of each arrival
        is_arr = np.zeros(nops, bool)
        is_arr[arrive] = True
        src = np.empty(nops, np.intp)
        src[arrive] = h + np.arange(b)
        exp_src = np.arange(E)
        src[~is_arr] = np.where(exp_src < m, exp_src, exp_src - m + h)
        ext = None
        if self.extremes is not None:  # checked before any state changes
            ext = self.extremes.run(state, win, cols, e)
            if ext is None:
                return None
        sd = None
        if self.stddevs is not None:
            sd = self.stddevs.run(state, data, src, is_arr)
            if sd is None:
                return None
        keys, codes = self._groups(data, h + b)
        after = self._accumulate(state, keys, codes[src], src, is_arr, data)
        if after is None:
            return None
        if sd is not None:
            Stddevs.store(state, {slot: f for slot, (_, f) in sd.items()})
            after.update({("stddev", slot): v for slot, (v, _) in sd.items()})
        if ext is not None:
            Extremes.store(state, {slot: f for slot, (_, f) in ext.items()})
            after.update({("extreme", slot): v for slot, (v, _) in ext.items()})
        return self._output(after, arrive, cols), E

    def expire(self, state, win, now):
        """A time window's timer: forget the events with ts <= now - T (no output: only
        CURRENT rows are wanted). -> how many left, or None to take the row path."""
        if not win.sorted:
            return None
        k = win.count_le(now - self.spec.param)
        if not k:
            return 0
        fin = None
        if self.extremes is not None:
            fin = self.extremes.expire(state, win, k)
            if fin is None:
                return None
        data = {i: win.head_column(i, k) for i in self.cols}
        keys, codes = self._groups(data, k)
        src = np.arange(k)
        sd = None
        if self.stddevs is not None:
            sd = self.stddevs.run(state, data, src, np.zeros(k, bool))
            if sd is None:
                return None
        if self._accumulate(state, keys, codes, src, np.zeros(k, bool), data) is None:
            return None
        if fin is not None:
            Extremes.store(state, fin)
        if sd is not None:
            Stddevs.store(state, {slot: f for slot, (_, f) in sd.items()})
        return k

    def _groups(self, data, n):
        """(group keys in first-appearance order, code of each data position)."""
        if not self.keys:
            return [None], np.zeros(n, np.intp)
        if (
            len(self.keys) == 1
            and self.key_types[0] in _HASHED
            and data[self.keys[0]][1] is None
            and _pandas() is not None
        ):
            # hashed in C; uniques in first-appearance order
            codes, uniq = _pandas().factorize(data[self.keys[0]][0], sort=False)
            return uniq.tolist(), codes.astype(np.intp, copy=False)
        lists = [pylist(*data[i]) for i in self.keys]
        vals = lists[0] if len(lists) == 1 else list(zip(*lists))
        index = {k: j for j, k in enumerate(dict.fromkeys(vals))}
        return list(index), np.fromiter(map(index.__getitem__, vals), np.intp, n)

    def _accumulate(self, state, keys, codes, src, is_arr, data):
        """Run every slot's operations per group and store the final values in `state`;
        -> {slot: value after each operation}, or None (nothing stored): the row path."""
        c, nops = self.c, len(src)
        cells = self.MAX_PAD * nops + 4096
        lay = segscan.layout(codes, len(keys), cells)
        if lay is None:
            return None
        sts = self._initial(state, keys)
        inits = {slot: self._inits(sts, slot, kind) for slot, (kind, _) in self.slots.items()}
        ops = {
            slot: self._op_values(kind, arg, data, src, is_arr)
            for slot, (kind, arg) in self.slots.items()
        }
        with np.errstate(all="ignore"):
            after, final, done = {}, {}, {}
            for slot in self.slots:
                sig = self._sig(slot, data)
                other = done.get(sig)
                if other is not None and inits[other] == inits[slot]:  # count() twice
                    after[slot], final[slot] = after[other], final[other]
                    continue
                after[slot], final[slot] = segscan.scan(lay, inits[slot], *ops[slot])
                done[sig] = slot
        if c.population is not None:
            self._forget(state, keys, sts, lay, is_arr, after)
        self._store(state, keys, sts, final)
        return after

    def _forget(self, state, keys, sts, lay, is_arr, after):
        """The row loop drops a group when a removal leaves its state exactly the initial
        one (`del G[key]`), and makes it again from the initial state when it comes back:
        the same values as going on, so the scans above hold; here such groups leave the
        state, and come back fresh unless their last operation dropped them."""
        dropped = ~is_arr
        for slot, (kind, _) in self.slots.items():
            v = after[slot]
            dropped &= v == 0
            if kind == "fsum":
                dropped &= ~np.signbit(v)
        if not dropped.any():
            return
        order = lay.order if lay.order is not None else np.arange(len(lay.codes))
        last_op = order[np.cumsum(lay.counts) - 1]  # of each group
        ends = dropped[last_op]
        had = np.zeros(len(keys), bool)
        had[lay.codes[dropped]] = True
        for j in np.flatnonzero(had).tolist():
            state.pop(keys[j], None)
            sts[j] = _GONE if ends[j] else None

    def _sig(self, slot, data):
        """What a slot's operations are: a count of non-null values of a column without
        nulls is a count of events."""
        kind, arg = self.slots[slot]
        if kind == "all" or kind == "cnt" and data[arg][1] is None:
            return "all", None
        return kind, arg

    def _op_values(self, kind, arg, data, src, is_arr):
        if kind == "all":
            return np.where(is_arr, 1, -1).astype(np.int64), 0, np.int64
        v, nl = data[arg]
        if kind == "cnt":
            ones = np.ones(len(src), np.int64) if nl is None else (~nl[src]).astype(np.int64)
            return np.where(is_arr, ones, -ones), 0, np.int64
        if kind == "fsum":
            x = v[src].astype(np.float64)
            x = np.where(is_arr, x, -x)
            if nl is not None:
                x[nl[src]] = -0.0
            return x, -0.0, np.float64
        x = v[src].astype(np.int64)
        x = np.where(is_arr, x, np.negative(x))
        if nl is not None:
            x[nl[src]] = 0
        return x, 0, np.int64

    def _initial(self, state, keys):
        """Each group's slot list (None for a group the state does not hold yet)."""
        if not self.keys:
            return [state]
        get = state.get
        return [get(k) for k in keys]

    def _inits(self, sts, slot, kind):
        """Each group's value of `slot` before the batch."""
        c = self.c
        if c.scalar:
            fresh = _init_value(None, slot, c, kind)
            vals = [fresh if st is None else st for st in sts]
        else:
            fresh = c.init_fn()[slot]
            vals = [fresh if st is None else st[slot] for st in sts]
        if kind == "isum":  # a Python long sum may have grown past 64 bits; Java's wraps
            vals = [_wrap(v) for v in vals]
        return vals

    def _store(self, state, keys, sts, final):
        c = self.c
        finals = [(slot, vals.tolist()) for slot, vals in final.items()]
        if c.scalar:
            ((_, vals),) = finals
            for k, st, v in zip(keys, sts, vals):
                if st is not _GONE:
                    state[k] = v
            return
        if None in sts or _GONE in sts:
            sts = list(sts)
            for j, (k, st) in enumerate(zip(keys, sts)):
                if st is None:
                    sts[j] = state[k] = c.init_fn()
                elif st is _GONE:
                    sts[j] = [None] * c.nslots  # written to, then dropped
        for slot, vals in finals:  # C loops: st[slot] = value for every group
            deque(map(setitem, sts, repeat(slot), vals), 0)

    def _output(self, after, arrive, cols):
        values, nulls = [], []
        for (what, x), dt in zip(self.outs, self.dtypes):
            if what == "attr":
                values.append(cols.values[x])
                nulls.append(cols.nulls[x])
                continue
            name, sl = x.spec.name, x.slots
            if name in ("min", "max"):  # each arrival's answer already
                v = after[("extreme", sl[0])]
            elif name == "stddev":
                v = after[("stddev", sl[0])][arrive]
            elif name == "avg":
                s, n = after[sl[0]][arrive], after[sl[1]][arrive]
                with np.errstate(all="ignore"):
                    v = np.where(n != 0, s / np.where(n != 0, n, 1), 0.0)
            else:
                v = after[sl[0]][arrive]
            values.append(v.astype(dt, copy=False))
            nulls.append(None)
        return Columns(self.out_def, cols.timestamps, values, nulls)


def _init_value(st, slot, c, kind):
    """A group's running value of `slot` before the batch (a fresh group: the initial)."""
    if st is None:
        v = c.init_fn()[slot] if not c.scalar else eval(c.scalar_init)  # noqa: S307
    elif c.scalar:
        v = st
    else:
        v = st[slot]
    return _wrap(v) if kind == "isum" else v


def _pandas():
    global _PD
    if _PD is False:
        try:
            import pandas

            _PD = pandas
        except ImportError:  # the dict path below does the same, slower
            _PD = None
    return _PD


_PD = False


def _wrap(v):
    return ((int(v) + (1 << 63)) & ((1 << 64) - 1)) - (1 << 63)
