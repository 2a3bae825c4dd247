"""The keyed kernel of a two-step pattern (or sequence) per key:

    from every e1=S[c1] -> e2=S[c2] [within T] select <e1./e2. expressions> insert into O
    from every e1=S[c1], e2=S[c2] [within T] ...   (e2: the key's very next event)

c1 reads e1 only; c2 reads e2 and e1. As the engine runs it (cep/engine/partition/kernel.py,
the general machine alike): every event passing c1 starts an instance after its own turn as
a possible e2, so an instance's e2 is the first LATER event of its key passing c2 with
t_e2 - t_e1 <= T (inclusive); the instance is gone once matched. Outputs leave in e2 order,
the instances one e2 completes in e1 order, each stamped with e2's timestamp.

Vectorized as a bounded forward scan: offset d = 1, 2, ... over the instances still waiting,
each stopping at its key's end or past `within`, c2 evaluated for all of them at once. The
scan's total work is bounded (WORK_PER_EVENT per event plus a floor); a batch that would
need more (very dense keys, no `within`) is declined and the engine runs it."""

import numpy as np

from cep.engine.columnar.exprs import Unsupported, _truth, compile_vec
from cep.engine.columnar.columns import DTYPES
from cep.engine.columnar.keyed import jump
from cep.engine.columnar.keyed.scan import key_time
from cep.engine.columnar.keyed.base import (
    NO_NULLS,
    Batch,
    KeyedKernel,
    Unsuited,
    batch_of,
    check_output,
    key_of_rows,
)
from cep.errors import CepError
from cep.model import And, EveryState, Filter, NextState, StateInputStream, StreamState

WORK_PER_EVENT = 64  # pair evaluations per event before the batch is declined
WORK_FLOOR = 1 << 20
MAX_STEPS = 20000  # scan offsets (numpy rounds) before the batch is declined
JUMP_REACH = 16  # a lone range condition reaching further: binary lifting (jump.py)


def build(query, definitions, keys):
    """A PatternKernel, or None when the query is not of this shape."""
    inp, s = query.input, query.selector
    if not isinstance(inp, StateInputStream) or inp.kind not in ("pattern", "sequence"):
        return None
    states = _two_states(inp.state)
    if states is None:
        return None
    a, b = states
    sid = a.stream_id
    if b.stream_id != sid or sid not in keys or sid not in definitions or a.inner or b.inner:
        return None
    if not a.alias or not b.alias or a.alias == b.alias:
        return None
    if s.select_all or s.group_by or s.having is not None or s.order_by or s.limit is not None:
        return None
    definition = definitions[sid]
    c1, c2 = _conds(a.handlers), _conds(b.handlers)
    if c1 is False or c2 is False:
        return None
    try:
        keep1 = (
            _truth(compile_vec(c1, _Scope(definition, a.alias, b.alias, own=0)))
            if c1 is not None
            else None
        )
        pair = _Scope(definition, a.alias, b.alias, own=1)
        keep2 = _truth(compile_vec(c2, pair)) if c2 is not None else None
        sel = _Scope(definition, a.alias, b.alias, own=None)
        outs = [compile_vec(x.expression, sel) for x in s.attributes]
    except (Unsupported, CepError) as exc:
        raise Unsuited(str(exc)) from exc
    target, attrs = check_output(
        query, definitions, [x.rename for x in s.attributes], [o.type for o in outs]
    )
    kernel = PatternKernel(sid, target, attrs, definition, inp.within_millis, keep1, keep2, outs)
    kernel.sequence = inp.kind == "sequence"
    kernel.jump = jump.range_shape(c2, definition, a.alias, b.alias)
    return kernel


def _two_states(state):
    """(e1 stream, e2 stream) of `every e1=S[..] -> e2=S[..]`, else None."""
    if not isinstance(state, NextState) or not isinstance(state.first, EveryState):
        return None
    first, then = state.first, state.then
    if (
        first.within_millis is not None
        or not isinstance(first.inner, StreamState)
        or not isinstance(then, StreamState)
    ):
        return None
    return first.inner.stream, then.stream


def _conds(handlers):
    """The conjunction of the filters, None without any, False for another handler."""
    cond = None
    for h in handlers:
        if not isinstance(h, Filter):
            return False
        cond = h.expression if cond is None else And(cond, h.expression)
    return cond


class _Scope:
    """Variables of a pattern's states as `r[i]` of a pair batch: e1's attributes at 0..A-1,
    e2's at A..2A-1. `own`: the state a bare attribute means (0: e1, 1: e2, None: none)."""

    def __init__(self, definition, a1, a2, own):
        self.definition, self.refs, self.own = definition, {a1: 0, a2: 1}, own
        self.width = len(definition.attributes)

    def resolve(self, variable):
        if variable.index is not None or variable.inner:
            raise Unsupported("an indexed or inner reference")
        side = self.own if variable.stream is None else self.refs.get(variable.stream)
        if side is None or (self.own == 0 and side != 0):
            raise Unsupported(f"'{variable.stream}.{variable.name}' here")
        i = self.definition.index_of(variable.name)
        if i < 0:
            raise Unsupported(f"no attribute '{variable.name}'")
        return f"r[{i + side * self.width}]", self.definition.attributes[i].type


class _Pairs:
    """Columns of (e1 rows, e2 rows) gathered on first use, as exprs reads `values[i]`."""

    def __init__(self, values, first, second):
        self.src, self.first, self.second = values, first, second
        self.cache = {}

    def __getitem__(self, i):
        v = self.cache.get(i)
        if v is None:
            w = len(self.src)
            v = self.cache[i] = self.src[i][self.first] if i < w else self.src[i - w][self.second]
        return v


def pair_batch(values, first, second):
    b = Batch([], len(first))
    b.values, b.nulls = _Pairs(values, first, second), NO_NULLS
    return b


class PatternKernel(KeyedKernel):
    sequence = False  # `every e1=S[c1], e2=S[c2]`: e2 must be the next event
    jump = None  # jump.range_shape of a lone range condition, or None

    def __init__(self, input_stream, output_stream, attrs, definition, within, keep1, keep2, outs):
        self.input_stream, self.output_stream = input_stream, output_stream
        self.output_attributes = attrs
        self.definition, self.within = definition, within
        self.keep1, self.keep2, self.outs = keep1, keep2, outs

    def run_chunk(self, ts, starts, cols, end_ts):
        n = len(ts)
        batch = batch_of(self.definition, cols, n)
        with np.errstate(all="ignore"):
            found = self._matches(ts, starts, batch, n)
            if found is None:
                return None
            first, second = found
            pairs = pair_batch(batch.values, first, second)
            out = {}
            for (name, t), o in zip(self.output_attributes, self.outs):
                v, _ = o.fn(pairs)
                out[name] = np.full(len(first), v, DTYPES[t]) if v.ndim == 0 else v
        return ts[second], out, key_of_rows(starts, n)[second]

    def _matches(self, ts, starts, batch, n):
        """(e1 index, e2 index) of every match, in e2 order then e1 order; None: declined."""
        inst = np.arange(n)
        if self.keep1 is not None:
            inst = inst[np.broadcast_to(self.keep1(batch), (n,))]
        key = key_of_rows(starts, n)
        stop = self._stops(ts, starts, key, inst)  # first e2 index out of reach
        if stop is None:
            return None
        live = stop > inst + 1
        pend, j, stop = inst[live], inst[live] + 1, stop[live]
        if self.jump is not None and len(pend) and int((stop - j).max()) > JUMP_REACH:
            return self._jump(batch, pend, j, stop)
        budget = WORK_PER_EVENT * n + WORK_FLOOR
        got1, got2, steps = [], [], 0
        while len(pend):
            budget -= len(pend)
            steps += 1
            if budget < 0 or steps > MAX_STEPS:
                return None
            hit = (
                self.keep2(pair_batch(batch.values, pend, j))
                if self.keep2 is not None
                else np.ones(len(pend), bool)
            )
            hit = np.broadcast_to(hit, (len(pend),))
            if hit.any():
                got1.append(pend[hit])
                got2.append(j[hit])
                miss = ~hit
                pend, j, stop = pend[miss], j[miss], stop[miss]
            j = j + 1
            go = j < stop
            if not go.all():
                pend, j, stop = pend[go], j[go], stop[go]
        if not got1:
            return np.empty(0, np.intp), np.empty(0, np.intp)
        first, second = np.concatenate(got1), np.concatenate(got2)
        order = np.lexsort((first, second))
        return first[order], second[order]

    def _jump(self, batch, pend, start, stop):
        """The matches of a lone `e2.x > f(e1)` condition by binary lifting (jump.py)."""
        i, op, thr, dtype = self.jump
        values = batch.values[i].astype(dtype, copy=False)
        t, _ = thr.fn(pair_batch(batch.values, pend, pend))
        t = np.broadcast_to(np.asarray(t).astype(dtype, copy=False), (len(pend),))
        hit, second = jump.matches(values, op, t, start, stop)
        first = pend[hit]
        order = np.lexsort((first, second))
        return first[order], second[order]

    def _stops(self, ts, starts, key, inst):
        """Per instance: its key's end, or the first event past `within` if sooner; in a
        sequence, e2 is the very next event of the key or nothing."""
        end = starts[1:][key[inst]]
        if self.sequence:
            end = np.minimum(end, inst + 2)
        if self.within is None or not len(inst):
            return end
        comp = key_time(key, ts, len(starts), self.within)
        if comp is None:
            return None
        reach = np.searchsorted(comp, comp[inst] + self.within, "right")
        return np.minimum(end, reach)
