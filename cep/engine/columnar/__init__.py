"""Columnar batches: `InputHandler.send_columns` / `send_arrow` take numpy or pyarrow
columns, checked per column; queries with an exact numpy kernel (stateless filters and
projections; `length`/`time`/`timeLength`/`externalTime` sum/avg/count [group by] and
ungrouped min/max/stddev; `lengthBatch`/`externalTimeBatch` ungrouped sum/avg/count; `unique`
sum/avg/count [group by]) process them without per-event tuples, and `add_callback(stream, fn, columnar=True)` receives `Columns`. Every other query
gets the same events as rows, so the output is the row path's. See cep/engine/README.md."""

from cep.engine.columnar.columns import Columns

__all__ = ["Columns", "attach_columnar"]


def attach_columnar(sel, query, scope, definition, pre_filter, fuse, wanted):
    """Give a query's selector (the head of its chain) a columnar kernel when one applies;
    its row batches then take the kernel too when that measures faster (adaptive.py)."""
    from cep.engine.columnar.adaptive import install
    from cep.engine.fused import FusedWindowSelector
    from cep.engine.selector import QuerySelector

    target = getattr(query.output, "target", "output")
    if isinstance(sel, FusedWindowSelector):
        from cep.engine.columnar.sliding import SlidingKernel, sliding_plan

        c = getattr(sel.code, "aggcode", None)
        plan = sliding_plan(c, fuse) if c is not None else None
        if plan is not None:
            sel.kernel = SlidingKernel(c, fuse, plan, sel.code.output_definition(target))
            install(sel, definition)
    elif type(sel) is QuerySelector and sel.code.init_state() is None:
        from cep.engine.columnar.stateless import stateless_kernel

        run = stateless_kernel(sel, query, scope, definition, pre_filter, wanted)
        if run is not None:
            sel.process_columns = run
            install(sel, definition)
    elif type(sel) is QuerySelector and not sel.code.batch_mode:
        if _running(sel, definition, target):
            install(sel, definition)


def _running(sel, definition, target):
    """Aggregates without a window (`from S select sum(x) ... group by k`): the sliding
    kernel with nothing ever expiring. Returns whether it applies."""
    from cep.engine.columnar.sliding import SlidingKernel, sliding_plan
    from cep.engine.columnar.stateless import emit
    from cep.engine.columnar.window import ColumnarWindow
    from cep.engine.fused import FuseSpec

    code = sel.code
    c = getattr(code.fn, "aggcode", None)
    if c is None or c.batch_mode or code.order_by or code.limit is not None:
        return False
    spec = FuseSpec("length", 1 << 62, False)
    plan = sliding_plan(c, spec)
    if plan is None:
        return False
    kernel, empty = (
        SlidingKernel(c, spec, plan, code.output_definition(target)),
        ColumnarWindow(definition),
    )

    def run(cols):
        res = kernel.run(sel.state, empty, cols, 0)
        if res is None:
            sel.process(cols.events())
        else:
            emit(sel, res[0])

    sel.process_columns = run
    return True
