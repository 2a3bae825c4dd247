"""The keyed kernel of a sliding aggregate per key:

    from S[c]#window.time(T) | #window.length(n)
    select <current event's attributes/expressions>, sum(x), avg(x), count() [group by a, ...]

The engine's order of operations, per key (each key a partition instance on its own playback
clock): on each arrival the window first expires its old events (time: event k leaves at the
first arrival with t >= t_k + T; length: the oldest once n are held), subtracting each from
its group's running values, then adds the arrival and emits its row. Here those operations
are laid out key after key (a group's in its key's order), and:
- counts and integer sums are exact prefix sums (64-bit wrap, as Java's long);
- floating sums are sequential running sums per key or group (scan.running_sums), so each
  value sees the same additions and subtractions in the same order: bit-identical doubles;
- with `group by`, a group whose window share empties keeps its running sum (a rounding
  residue stays, as in Siddhi 3.2; the engine forgets the group only when the sum is exactly
  +0.0, where going on gives the same values);
- avg = sum / count as the engine's `S0 / S1`.
Float group-by attributes are declined (the engine keeps each NaN key apart)."""

import numpy as np

from cep.engine.columnar.exprs import Unsupported, _truth, compile_vec
from cep.engine.columnar.keyed.base import (
    KeyedKernel,
    Unsuited,
    apply_having,
    batch_of,
    check_output,
    compile_having,
    key_of_rows,
)
from cep.engine.columnar.keyed.scan import (
    key_time,
    local_index,
    running_sums,
    wrapping_cumsum,
)
from cep.engine.expressions import SingleStreamScope
from cep.engine.selector import has_aggregators
from cep.errors import CepError
from cep.model import (
    And,
    AttrType,
    Constant,
    Filter,
    FunctionCall,
    Selector,
    SingleInputStream,
    TimeConstant,
    Window,
)

_INTS = (AttrType.INT, AttrType.LONG)
_FLOATS = (AttrType.FLOAT, AttrType.DOUBLE)
_KEYS = (AttrType.STRING, AttrType.INT, AttrType.LONG, AttrType.BOOL)
_TYPE = {
    "count": lambda t: AttrType.LONG,
    "avg": lambda t: AttrType.DOUBLE,
    "sum": lambda t: AttrType.LONG if t in _INTS else AttrType.DOUBLE,
}


def build(query, definitions, keys):
    """A SlidingKernel, or None when the query is not of this shape."""
    inp, s = query.input, query.selector
    if not isinstance(inp, SingleInputStream) or inp.inner or not has_aggregators(s):
        return None
    if s.order_by or s.limit is not None or s.select_all:
        return None
    if inp.stream_id not in keys or inp.stream_id not in definitions:
        return None
    window, cond = _handlers(inp.handlers)
    if window is None:
        return None
    definition = definitions[inp.stream_id]
    scope = SingleStreamScope(definition, (inp.alias,))
    try:
        keep = _truth(compile_vec(cond, scope)) if cond is not None else None
        group = [compile_vec(v, scope) for v in s.group_by]
        outs = [_output(a.expression, scope) for a in s.attributes]
    except (Unsupported, CepError) as exc:
        raise Unsuited(str(exc)) from exc
    if any(g.type not in _KEYS for g in group):
        return None
    target, attrs = check_output(
        query, definitions, [a.rename for a in s.attributes], [o[-1] for o in outs]
    )
    kernel = SlidingKernel(inp.stream_id, target, attrs, definition, window, keep, group, outs)
    kernel.having = compile_having(s.having, attrs)
    return kernel


def _handlers(handlers):
    """((kind, param), filter expression or None) for filters then a length/time window."""
    if not handlers or not isinstance(handlers[-1], Window):
        return None, None
    w = handlers[-1]
    if w.namespace or w.name.lower() not in ("length", "time") or len(w.params) != 1:
        return None, None
    p = w.params[0]
    if isinstance(p, TimeConstant):
        param = p.millis
    elif isinstance(p, Constant) and p.type in _INTS and not isinstance(p.value, bool):
        param = p.value
    else:
        return None, None
    kind = w.name.lower()
    if param < 1 or (kind == "length" and not isinstance(p, Constant)):
        return None, None
    cond = None
    for h in handlers[:-1]:
        if not isinstance(h, Filter):
            return None, None
        cond = h.expression if cond is None else And(cond, h.expression)
    return (kind, int(param)), cond


def _output(expr, scope):
    """("agg", name, Vec or None, type) or ("expr", Vec, type)."""
    if isinstance(expr, FunctionCall) and expr.namespace is None and expr.name.lower() in _TYPE:
        name = expr.name.lower()
        if name == "count" and len(expr.args) <= 1:
            return "agg", "count", None, AttrType.LONG
        if name == "count" or len(expr.args) != 1:
            raise Unsupported(name)
        arg = compile_vec(expr.args[0], scope)
        if arg.type not in _INTS + _FLOATS:
            raise Unsupported(f"{name} of {arg.type}")
        return "agg", name, arg, _TYPE[name](arg.type)
    if _has_agg(expr):
        raise Unsupported("an expression over aggregates")
    v = compile_vec(expr, scope)
    return "expr", v, v.type


def _has_agg(expr):
    from cep.model import OutputAttribute

    return has_aggregators(Selector(attributes=(OutputAttribute("x", expr),)))


class SlidingKernel(KeyedKernel):
    having = None  # a compiled `having` over the output row, or None

    def __init__(self, input_stream, output_stream, attrs, definition, window, keep, group, outs):
        self.input_stream, self.output_stream = input_stream, output_stream
        self.output_attributes = attrs
        self.definition, self.window, self.keep = definition, window, keep
        self.group, self.outs = group, outs

    def run_chunk(self, ts, starts, cols, end_ts):
        with np.errstate(all="ignore"):
            return self._run(ts, starts, cols, len(ts))

    def _run(self, ts, starts, cols, n):
        batch = batch_of(self.definition, cols, n)
        rows = np.arange(n)
        if self.keep is not None:
            mask = self.keep(batch)
            rows = rows[np.broadcast_to(mask, (n,))]
        if len(rows) != n:
            batch = batch_of(self.definition, cols, n, rows)
        key = key_of_rows(starts, n)[rows]
        kstarts = np.searchsorted(rows, starts).astype(np.intp)  # kept rows' key runs
        t = ts[rows]
        li = local_index(kstarts, key)
        e = self._expired(t, key, kstarts, li)
        if e is None:
            return None
        ops = _Ops(e, key, kstarts, li)
        seg = self._segments(batch, ops)
        out = {}
        for (name, _), o in zip(self.output_attributes, self.outs):
            out[name] = self._column(o, batch, ops, seg)
        return apply_having(self.having, self.output_attributes, t, out, key)

    def _expired(self, t, key, kstarts, li):
        """e[i]: how many of its key's kept events have left the window once arrival i has
        expired its share (li: arrival i's key-local position, the bound)."""
        kind, param = self.window
        if kind == "length":
            return np.maximum(0, li - param + 1)
        if not len(t):
            return li
        comp = key_time(key, t, len(kstarts), param)
        if comp is None:
            return None
        # events of its key with t_k <= t - T; a limit below the key's first event counts
        # earlier keys' events or none: <= 0 after the key's start is taken off
        e = np.searchsorted(comp, comp - param, "right")
        e -= kstarts[key]
        return np.clip(e, 0, li, out=e)

    def _segments(self, batch, ops):
        """The running-value segments: keys, or (key, group) cut where a group empties."""
        if not self.group:
            return _KeySegments(ops)
        return _Segments.of_groups(ops, _group_codes(batch, ops.key, self.group))

    def _column(self, o, batch, ops, seg):
        if o[0] == "expr":
            v, _ = o[1].fn(batch)
            return np.full(len(ops.key), v, v.dtype) if v.ndim == 0 else v
        _, name, arg, t = o
        cnt = seg.count()
        if name == "count":
            return cnt
        x, _ = arg.fn(batch)
        if x.ndim == 0:
            x = np.full(len(ops.key), x)
        if name == "sum" and t == AttrType.LONG:
            return seg.int_sum(x.astype(np.int64))
        s = seg.float_sum(x.astype(np.float64))
        return s if name == "sum" else s / cnt


class _Ops:
    """The operations of every key in the engine's order: each arrival's expiries, then the
    arrival. arrive: the op index of each arrival; expire/exp_src: the op index of each
    expiry (ascending) and the kept event it takes out; src/sign (for groups): per op."""

    def __init__(self, e, key, kstarts, li):
        nk, m = len(kstarts) - 1, len(key)
        self.key, self.kstarts, self.e, self.li = key, kstarts, e, li
        last = kstarts[1:] - 1
        has = kstarts[1:] > kstarts[:-1]
        E = np.where(has, e[np.maximum(last, 0)] if m else 0, 0)  # expiries per key
        per_key = np.diff(kstarts) + E
        self.ostarts = np.concatenate([[0], np.cumsum(per_key)]).astype(np.intp)
        self.nops = nops = int(self.ostarts[-1])
        self.arrive = (self.ostarts[:-1] - kstarts[:-1])[key] + e + np.arange(m)
        is_arr = np.zeros(nops, bool)
        is_arr[self.arrive] = True
        self.is_arr = is_arr
        self.expire = np.flatnonzero(~is_arr)
        estarts = np.cumsum(E) - E
        self.exp_src = np.arange(len(self.expire)) + np.repeat(kstarts[:nk] - estarts, E)

    @property
    def src(self):
        src = np.empty(self.nops, np.intp)
        src[self.arrive] = np.arange(len(self.arrive))
        src[self.expire] = self.exp_src
        return src

    @property
    def sign(self):
        return np.where(self.is_arr, 1, -1).astype(np.int64)


class _KeySegments:
    """Without `group by`: one running state per key, never forgotten."""

    def __init__(self, ops):
        self.ops = ops
        self._count = None

    def count(self):
        if self._count is None:
            self._count = self.ops.li - self.ops.e + 1
        return self._count

    def int_sum(self, x):
        """sum of the window's events: a difference of wrapping prefix sums (exact)."""
        ops = self.ops
        p = wrapping_cumsum(x)
        with np.errstate(over="ignore"):
            return p[1:] - p[ops.kstarts[ops.key] + ops.e]

    def float_sum(self, x):
        ops = self.ops
        v = np.empty(ops.nops, np.float64)
        v[ops.arrive] = x
        v[ops.expire] = -x[ops.exp_src]
        st = ops.ostarts[:-1][ops.ostarts[1:] > ops.ostarts[:-1]]
        v[st] += 0.0  # the engine's running sum starts at 0.0 (0.0 + -0.0 is 0.0)
        return running_sums(v, st)[ops.arrive]


class _Segments:
    """Operations in group order (`order`: op indexes), each group's first operation in that
    order (`starts`), and where each arrival's value sits (`at`). A group is never cut where
    it empties: its running values go on (see `float_sum`)."""

    def __init__(self, ops, order, starts, src, sign):
        self.ops, self.order, self.starts = ops, order, starts
        self.src, self.sign = src, sign  # in op order, in segment order
        pos = np.empty(len(order), np.intp)
        pos[order] = np.arange(len(order))
        self.at = pos[ops.arrive]

    @classmethod
    def of_groups(cls, ops, gcode):
        src = ops.src
        codes = gcode[src]
        order = np.argsort(codes, kind="stable")
        sc = codes[order]
        gstarts = (
            np.flatnonzero(np.r_[True, sc[1:] != sc[:-1]]) if len(sc) else np.empty(0, np.intp)
        )
        return cls(ops, order, gstarts, src, ops.sign[order])

    def count(self):
        """Events of the key's (group's) window after each arrival."""
        return _seg_cumsum(self.sign, self.starts)[self.at]

    def int_sum(self, x):
        """Exact 64-bit wrapping running sums (a group that empties sums to 0 exactly)."""
        v = x[self.src[self.order]] * self.sign
        return _seg_cumsum(v, self.starts)[self.at]

    def float_sum(self, x):
        v = x[self.src[self.order]]
        v = np.where(self.sign > 0, v, -v)
        # a group's running sum starts at 0.0 (0.0 + -0.0 is 0.0) and goes on through the
        # group emptying: the engine forgets a group only when its sum is back to exactly
        # +0.0, where going on gives the same values, and keeps a rounding residue as Siddhi
        v[self.starts] = 0.0 + v[self.starts]
        return running_sums(v, self.starts)[self.at]


def _seg_cumsum(v, starts):
    """Exact integer running sums restarting at each segment start (64-bit wrap)."""
    c = wrapping_cumsum(v)
    lens = np.diff(np.append(starts, len(v)))
    with np.errstate(over="ignore"):
        return c[1:] - np.repeat(c[starts], lens)


def _group_codes(batch, key, group):
    """A code per kept event for its (key, group-by values)."""
    import pandas as pd

    code = key.astype(np.int64)
    for g in group:
        v, _ = g.fn(batch)
        c, uniq = pd.factorize(np.broadcast_to(v, (len(key),)) if v.ndim == 0 else v, sort=False)
        code, _ = pd.factorize(code * max(len(uniq), 1) + c, sort=False)
        code = code.astype(np.int64)
    return code
