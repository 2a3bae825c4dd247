"""The columnar kernel of a stateless query (filters and a projection, no window, no
aggregate): one numpy operation per filter and output expression over the whole batch."""

import numpy as np

from cep.engine.columnar.columns import DTYPES, Columns
from cep.engine.columnar.exprs import Unsupported, _truth, compile_vec
from cep.engine.events import CURRENT
from cep.engine.select_clause import output_items


def emit(proc, cols):
    """Push a columnar result to `proc.next`: as Columns when it takes them, else as rows."""
    if not len(cols):
        return
    nxt = proc.next
    pc = getattr(nxt, "process_columns", None)
    if pc is not None:
        pc(cols)
    else:
        nxt.process(cols.events())


def stateless_kernel(sel, query, scope, definition, pre_filter, wanted):
    """`run(cols)` for a QuerySelector without aggregates, or None when some part has no
    exact columnar form (then every batch takes the row path)."""
    s, code = query.selector, sel.code
    if s.having is not None or code.order_by or code.limit is not None or CURRENT not in wanted:
        return None
    try:
        keep = _truth(compile_vec(pre_filter, scope)) if pre_filter is not None else None
        outs = [compile_vec(e, scope) for _, e in output_items(s, scope, definition)]
    except Unsupported:
        return None
    if [o.type for o in outs] != list(code.types):
        return None
    out_def = code.output_definition(getattr(query.output, "target", "output"))
    dtypes = [DTYPES[t] for t in code.types]

    def run(cols):
        with np.errstate(all="ignore"):
            mask = None
            if keep is not None:
                mask = keep(cols)
                if mask.ndim == 0:
                    mask = np.full(len(cols), bool(mask))
                if not mask.any():
                    return
                if mask.all():
                    mask = None
            out = _project(outs, dtypes, cols, mask, out_def)
        emit(sel, out)

    return run


def _project(outs, dtypes, cols, mask, out_def):
    """The output Columns: each output expression over the batch, kept where `mask`."""
    values, nulls = [], []
    for o, dt in zip(outs, dtypes):
        v, m = o.fn(cols)
        if v.ndim == 0:
            v = np.full(len(cols), v, dt)
        if mask is not None:
            v = v[mask]
            m = None if m is None else m[mask]
            m = m if m is not None and m.any() else None
        values.append(v)
        nulls.append(m)
    ts = cols.timestamps if mask is None else cols.timestamps[mask]
    return Columns(out_def, ts, values, nulls)
