"""What every backtest task shares, keyed (keyed_task.py) or not (task.py): the batch of
counts it yields back (STAT_SCHEMA; STAT_DDL is the same schema for mapInArrow), and how it
sends a run of events into the engine."""

import json

import pyarrow as pa

STAT_SCHEMA = pa.schema(
    [
        ("stream", pa.string()),
        ("count", pa.int64()),
        ("first_ts", pa.int64()),
        ("last_ts", pa.int64()),
        ("buckets", pa.string()),
    ]
)
STAT_DDL = "stream string, count bigint, first_ts bigint, last_ts bigint, buckets string"


def send_rows(handler, stream_id, ts, cols):
    """One send_batch of the events with timestamps `ts` and attribute columns `cols` (lists);
    a rejected event fails the task, naming its timestamp and stream."""
    rows = list(zip(*cols)) if cols else [()] * len(ts)
    bad = handler.send_batch(list(zip(ts, rows)))
    if bad:
        i, err = bad[0]
        raise ValueError(f"event at {ts[i]} of {stream_id} rejected: {err}")


def stats_batch(count, first, last, writers, seconds=None):
    """The task's STAT_SCHEMA batch; `writers`: (stream, writer) pairs."""
    rows = [("", count, first, last, json.dumps(seconds) if seconds else "")]
    rows += [(sid, w.count, w.first_ts, w.last_ts, json.dumps(w.buckets)) for sid, w in writers]
    cols = list(zip(*rows))
    return pa.RecordBatch.from_arrays(
        [pa.array(c, t.type) for c, t in zip(cols, STAT_SCHEMA)], schema=STAT_SCHEMA
    )
