"""What runs inside one Spark task: the engine over the task's events.

The task gets Arrow batches sorted by (timestamp, input index, row number), keyed plans by
the partition key first (each key's events back to back, so the engine's partition gets long
runs of one key instead of ~2 events per key per batch), with the columns
`__ts`, `__s` (input index), `__seq`, `__k` and `c<i>_<j>` (attribute j of input i). Runs of
one stream go to its InputHandler with one `send_batch`; every exported stream's events go
through an OutputWriter into `<tmp>/<Stream>/part-<partition>.<ext>`. It yields one small
batch of counts per task (events in, out per stream, first and last timestamps)."""
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

STAT_SCHEMA = pa.schema([("stream", pa.string()), ("count", pa.int64()),
                         ("first_ts", pa.int64()), ("last_ts", pa.int64()),
                         ("buckets", pa.string())])
STAT_DDL = "stream string, count bigint, first_ts bigint, last_ts bigint, buckets string"


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
    keyed: bool = False  # events come sorted by (key, timestamp): one key's run after another


def run_partition(spec, batches, partition_id):
    """Generator of STAT_SCHEMA batches: the engine over `batches` (Arrow, sorted)."""
    import cep
    from cep.backtest.outputs import OutputWriter
    from cep.backtest.rewrite import split_partitions
    plan = cep.compile(spec.plan_text)
    rt = cep.ExecutionPlanRuntime(split_partitions(plan) if spec.keyed else plan, playback=True)
    writers = {sid: OutputWriter(spec.tmp_dir, sid, rt.junctions[sid].definition, spec.fmt,
                                 partition_id, spec.bucket_ms) for sid in spec.outputs}
    try:
        for sid, w in writers.items():
            rt.add_callback(sid, w.add)
        handlers = [rt.input_handler(sid) for sid, _ in spec.inputs]
        count, first, last, key = 0, None, None, [None]
        for batch in batches:
            if batch.num_rows == 0:
                continue
            if spec.keyed:
                _feed_keys(batch, spec, handlers, rt, key)
            else:
                _feed(batch, spec, handlers)
            bounds = pc.min_max(batch.column(0))
            count += batch.num_rows
            first = min(bounds["min"].as_py(), first if first is not None else bounds["min"].as_py())
            last = max(bounds["max"].as_py(), last if last is not None else bounds["max"].as_py())
        if count:
            rt.advance_time(spec.end_ts)
        for w in writers.values():
            w.close()
    finally:
        rt.shutdown()
    yield _stats(count, first, last, writers)


def _feed_keys(batch, spec, handlers, rt, key):
    """A batch sorted by (key, timestamp): each key's run on a clock of its own. When the key
    changes, the timers left by the previous keys fire (advance to the end) and the playback
    clock starts again, so a key's time windows and `within` see only its own timestamps, as
    in the timestamp-merged run (where other keys' events never expire this key's state)."""
    keys = batch.column(3)
    n = len(keys)
    changes = pc.indices_nonzero(pc.not_equal(keys.slice(1), keys.slice(0, n - 1)))
    bounds = [0, *(i + 1 for i in changes.to_pylist()), n]
    for a, b in zip(bounds, bounds[1:]):
        k = keys[a].as_py()
        if key[0] is not None and k != key[0]:
            rt.advance_time(spec.end_ts)
            rt.scheduler.restore_clock(None)
        key[0] = k
        _feed(batch.slice(a, b - a), spec, handlers)


def _feed(batch, spec, handlers):
    """Send a sorted batch: each run of consecutive events of one stream in one send_batch."""
    ts = batch.column(0).to_pylist()
    streams = batch.column(1)
    names = batch.schema.names
    n = len(streams)
    changes = pc.indices_nonzero(pc.not_equal(streams.slice(1), streams.slice(0, n - 1)))
    bounds = [0, *(i + 1 for i in changes.to_pylist()), n]
    columns_of = {}
    for a, b in zip(bounds, bounds[1:]):
        index = streams[a].as_py()
        if index not in columns_of:
            sid, width = spec.inputs[index]
            columns_of[index] = [names.index(f"c{index}_{j}") for j in range(width)]
        cols = [batch.column(c).slice(a, b - a).to_pylist() for c in columns_of[index]]
        rows = list(zip(*cols)) if cols else [()] * (b - a)
        bad = handlers[index].send_batch(list(zip(ts[a:b], rows)))
        if bad:
            i, err = bad[0]
            raise ValueError(f"event at {ts[a + i]} of {spec.inputs[index][0]} rejected: {err}")


def _stats(count, first, last, writers):
    import json
    rows = [("", count, first, last, "")]
    rows += [(sid, w.count, w.first_ts, w.last_ts, json.dumps(w.buckets))
             for sid, w in writers.items()]
    cols = list(zip(*rows))
    return pa.RecordBatch.from_arrays([pa.array(c, t.type) for c, t in zip(cols, STAT_SCHEMA)],
                                      schema=STAT_SCHEMA)
