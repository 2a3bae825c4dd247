"""The keyed kernel of a stateless query: `from S[c]... select <expressions> insert into T`.

Filters and projections have no state, so each key's run gives what the whole partition
gives: one numpy operation per filter and select expression (cep.engine.columnar.exprs, the
row path's Java semantics). A `length`/`time` sliding window without aggregates emits each
arrival as it comes (only its expired events differ, and `insert into` takes current events
only), so it is stateless here too."""

import numpy as np

from cep.engine.columnar.columns import DTYPES
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
from cep.engine.expressions import SingleStreamScope
from cep.engine.selector import has_aggregators, output_items
from cep.errors import CepError
from cep.model import And, Filter, SingleInputStream, Window

_SLIDING = ("length", "time")


def build(query, definitions, keys):
    """A StatelessKernel, or None when the query is not stateless."""
    inp, s = query.input, query.selector
    if not isinstance(inp, SingleInputStream) or inp.inner or has_aggregators(s):
        return None
    if s.group_by or s.order_by or s.limit is not None:
        return None
    filters = _filters(inp.handlers)
    if filters is None:
        return None
    definition = definitions.get(inp.stream_id)
    if definition is None:
        return None
    scope = SingleStreamScope(definition, (inp.alias,))
    try:
        keep = (
            _truth(compile_vec(filters, scope))
            if filters is not None and filters is not True
            else None
        )
        items = output_items(s, scope, definition)
        outs = [compile_vec(e, scope) for _, e in items]
    except (Unsupported, CepError) as exc:  # unknown names too: the engine reports them
        raise Unsuited(str(exc)) from exc
    target, attrs = check_output(query, definitions, [n for n, _ in items], [o.type for o in outs])
    kernel = StatelessKernel(inp.stream_id, target, attrs, definition, keep, outs)
    kernel.having = compile_having(s.having, attrs)
    return kernel


def _filters(handlers):
    """The conjunction of the filters (True for none), or None when another handler (a
    stream function, a window other than a plain sliding one) is there."""
    cond = True
    for i, h in enumerate(handlers):
        if isinstance(h, Filter):
            cond = h.expression if cond is True else And(cond, h.expression)
        elif not (
            isinstance(h, Window)
            and i == len(handlers) - 1
            and not h.namespace
            and h.name.lower() in _SLIDING
        ):
            return None
    return cond


class StatelessKernel(KeyedKernel):
    having = None  # a compiled `having` over the output row, or None

    def __init__(self, input_stream, output_stream, attrs, definition, keep, outs):
        self.input_stream, self.output_stream = input_stream, output_stream
        self.output_attributes = attrs
        self.definition, self.keep, self.outs = definition, keep, outs

    def run_chunk(self, ts, starts, cols, end_ts):
        n = len(ts)
        batch = batch_of(self.definition, cols, n)
        with np.errstate(all="ignore"):
            rows = None
            if self.keep is not None:
                mask = self.keep(batch)
                mask = np.broadcast_to(mask, (n,)) if mask.ndim == 0 else mask
                rows = np.flatnonzero(mask)
            out = {}
            for (name, t), o in zip(self.output_attributes, self.outs):
                v, _ = o.fn(batch)
                if v.ndim == 0:
                    v = np.full(n, v, DTYPES[t])
                out[name] = v if rows is None else v[rows]
        keys = key_of_rows(starts, n)
        if rows is not None:
            ts, keys = ts[rows], keys[rows]
        return apply_having(self.having, self.output_attributes, ts, out, keys)
