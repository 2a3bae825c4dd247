"""What runs inside one Spark task: the engine (and keyed kernels) over the task's events.

The task gets Arrow batches with the columns `__ts`, `__seq` (row number), `__s` (input index,
only with several inputs), the key column of keyed plans (`__k`, or the key attribute's own
column with one input) and `c<i>_<j>` (attribute j of input i). Keyed tasks get them unsorted
and sort them with numpy (keyed_task.py: kernels, then the engine for the other queries);
single-task plans get them sorted by (timestamp, input index, row number) from Spark, and
runs of one stream go to its InputHandler with one `send_batch`; every exported stream's
events go through an OutputWriter into `<tmp>/<Stream>/part-<partition>.<ext>`. A task yields
one small batch of counts (events in, out per stream, first and last timestamps; the events-in
row's `buckets` holds the task's seconds per phase)."""

from dataclasses import dataclass

import pyarrow.compute as pc

# re-exported: the job reads the schema from here
from cep.backtest.task_io import STAT_DDL, STAT_SCHEMA, send_rows, stats_batch  # noqa: F401


@dataclass(frozen=True)
class TaskSpec:
    """Everything a task needs, pickled into the closure (no driver objects)."""

    plan_text: str
    inputs: tuple  # (stream id, number of attributes) per input index
    outputs: tuple  # exported stream ids
    tmp_dir: str
    fmt: str
    end_ts: int  # the last timestamp of all inputs: each task's clock ends there
    bucket_ms: int  # width of the output-count histogram buckets
    keyed: bool = False  # one key's run after another (sorted in the task)
    key_column: str = "__k"  # keyed: the column the events were repartitioned by
    kernels: bool = True  # keyed: numpy kernels for the queries that have one


def run_partition(spec, batches, partition_id):
    """Generator of STAT_SCHEMA batches: keyed plans through keyed_task, others the engine
    over `batches` (Arrow, sorted)."""
    if spec.keyed:
        from cep.backtest.keyed_task import run_keyed

        yield from run_keyed(spec, batches, partition_id)
        return
    import cep
    from cep.backtest.outputs import OutputWriter

    plan = cep.compile(spec.plan_text)
    rt = cep.ExecutionPlanRuntime(plan, playback=True)
    writers = {
        sid: OutputWriter(
            spec.tmp_dir, sid, rt.junctions[sid].definition, spec.fmt, partition_id, spec.bucket_ms
        )
        for sid in spec.outputs
    }
    try:
        for sid, w in writers.items():
            rt.add_callback(sid, w.add)
        handlers = [rt.input_handler(sid) for sid, _ in spec.inputs]
        count, first, last = 0, None, None
        for batch in batches:
            if batch.num_rows == 0:
                continue
            _feed(batch, spec, handlers)
            bounds = pc.min_max(batch.column("__ts"))
            count += batch.num_rows
            first = min(
                bounds["min"].as_py(), first if first is not None else bounds["min"].as_py()
            )
            last = max(bounds["max"].as_py(), last if last is not None else bounds["max"].as_py())
        if count:
            rt.advance_time(spec.end_ts)
        for w in writers.values():
            w.close()
    finally:
        rt.shutdown()
    yield stats_batch(count, first, last, writers.items())


def _feed(batch, spec, handlers):
    """Send a sorted batch: each run of consecutive events of one stream in one send_batch."""
    ts = batch.column("__ts").to_pylist()
    names = batch.schema.names
    n = len(ts)
    if "__s" in names:
        streams = batch.column("__s")
        changes = pc.indices_nonzero(pc.not_equal(streams.slice(1), streams.slice(0, n - 1)))
        bounds = [0, *(i + 1 for i in changes.to_pylist()), n]
    else:
        streams, bounds = None, [0, n]
    columns_of = {}
    for a, b in zip(bounds, bounds[1:]):
        index = streams[a].as_py() if streams is not None else 0
        if index not in columns_of:
            sid, width = spec.inputs[index]
            columns_of[index] = [names.index(f"c{index}_{j}") for j in range(width)]
        cols = [batch.column(c).slice(a, b - a).to_pylist() for c in columns_of[index]]
        send_rows(handlers[index], spec.inputs[index][0], ts[a:b], cols)
