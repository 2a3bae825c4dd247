"""A keyed task: numpy kernels for the queries that have one, the engine for the rest.

The task's events arrive unsorted; SortedPartition sorts them by (key, timestamp, input, row).
Each query a keyed kernel takes (rewrite.kernel_queries) runs over its input stream's whole
sorted column set at once and its output columns go straight to `part-<p>-k<i>.<ext>`; a
kernel that declines the batch (nulls, a scan too long) leaves its query to the engine. The
engine then runs the plan without the kernel-run queries, fed only the streams that plan reads,
each key's events back to back on a playback clock of its own (as task.py did for all). The
stats row of events in carries the task's seconds per phase (gather = waiting for the shuffle's
batches, sort, kernels, engine, write) for the benchmark's breakdown."""

import time

import numpy as np

from cep.backtest.columnar import SortedPartition, run_starts


class Phases:
    """Wall seconds per phase of one task."""

    def __init__(self):
        self.seconds, self._last = {}, time.perf_counter()

    def lap(self, name):
        now = time.perf_counter()
        self.seconds[name] = self.seconds.get(name, 0.0) + now - self._last
        self._last = now


def run_keyed(spec, batches, partition_id):
    """Generator of one STAT_SCHEMA batch: the task's outputs written, its counts."""
    import cep
    from cep.backtest.rewrite import split_partitions
    from cep.backtest.task_io import stats_batch

    phases = Phases()
    got = [b for b in batches if b.num_rows]
    phases.lap("gather")
    if not got:
        yield stats_batch(0, None, None, [], phases.seconds)
        return
    part = SortedPartition(got, spec.key_column, spec.inputs)
    del got
    phases.lap("sort")
    plan = split_partitions(cep.compile(spec.plan_text))
    phases.lap("plan")
    writers, taken = _run_kernels(spec, plan, part, partition_id, phases)
    writers += _run_engine(spec, plan, taken, part, partition_id, phases)
    yield stats_batch(part.n, int(part.ts.min()), int(part.ts.max()), writers, phases.seconds)


def _run_kernels(spec, plan, part, partition_id, phases):
    from cep.backtest.outputs import ColumnWriter
    from cep.backtest.rewrite import kernel_queries
    from cep.model.definitions import Attribute, StreamDefinition

    if not spec.kernels:
        return [], []
    definitions = {s.id: s for s in plan.streams}
    index_of = {sid: i for i, (sid, _) in enumerate(spec.inputs)}
    views, writers, taken = {}, [], []
    for j, (query, kernel) in enumerate(kernel_queries(plan, set(index_of), spec.outputs)):
        i = index_of[kernel.input_stream]
        phases.lap("plan")
        if i not in views:
            views[i] = part.view(i, definitions[kernel.input_stream].attributes)
        phases.lap("sort")
        if views[i] is None:  # nulls: the engine
            continue
        result = kernel.run(*views[i], spec.end_ts)
        phases.lap("kernels")
        if result is None:
            continue
        out_ts, out_cols, _ = result
        attrs = tuple(Attribute(n, t) for n, t in kernel.output_attributes)
        writer = ColumnWriter(
            spec.tmp_dir,
            kernel.output_stream,
            StreamDefinition(kernel.output_stream, attrs),
            spec.fmt,
            partition_id,
            spec.bucket_ms,
            suffix=f"-k{j}",
        )
        writer.write_columns(np.asarray(out_ts, np.int64), out_cols)
        writer.close()
        phases.lap("write")
        writers.append((kernel.output_stream, writer))
        taken.append(query)
    return writers, taken


def _run_engine(spec, plan, taken, part, partition_id, phases):
    """The engine over the plan without `taken`; [(stream, OutputWriter)]."""
    import cep
    from cep.backtest.outputs import OutputWriter
    from cep.backtest.rewrite import without_queries

    rest, read = without_queries(plan, taken)
    indices = [i for i, (sid, _) in enumerate(spec.inputs) if sid in read]
    if rest is None or not indices:
        return []
    rt = cep.ExecutionPlanRuntime(rest, playback=True)
    writers = [
        (
            sid,
            OutputWriter(
                spec.tmp_dir,
                sid,
                rt.junctions[sid].definition,
                spec.fmt,
                partition_id,
                spec.bucket_ms,
            ),
        )
        for sid in spec.outputs
        if sid in rt.junctions
    ]
    try:
        for sid, w in writers:
            rt.add_callback(sid, w.add)
        handlers = {i: rt.input_handler(spec.inputs[i][0]) for i in indices}
        _feed_runs(spec, rt, handlers, *part.sorted_rows(indices))
        rt.advance_time(spec.end_ts)
        phases.lap("engine")
        for _, w in writers:
            w.close()
        phases.lap("write")
    finally:
        rt.shutdown()
    return writers


def _feed_runs(spec, rt, handlers, table, codes, streams):
    """Each key's run back to back: when the key changes, the timers left by the previous
    keys fire (advance to the end) and the playback clock starts again, so a key's time
    windows and `within` see only its own timestamps, as in the timestamp-merged run."""
    from cep.backtest.task_io import send_rows

    ts = table.column("__ts").to_pylist()
    columns = {}
    for i in handlers:
        width = spec.inputs[i][1]
        columns[i] = [table.column(f"c{i}_{j}").to_pylist() for j in range(width)]
    starts = run_starts(codes).tolist()
    cuts = (np.flatnonzero(streams[1:] != streams[:-1]) + 1).tolist() if streams is not None else []
    for a, b in zip(starts, starts[1:]):
        if a:
            rt.advance_time(spec.end_ts)
            rt.scheduler.restore_clock(None)
        lo = np.searchsorted(cuts, a, side="right") if cuts else 0
        hi = np.searchsorted(cuts, b, side="left") if cuts else 0
        bounds = [a, *cuts[lo:hi], b]
        for x, y in zip(bounds, bounds[1:]):
            i = int(streams[x]) if streams is not None else 0
            send_rows(handlers[i], spec.inputs[i][0], ts[x:y], [c[x:y] for c in columns[i]])
