"""Output datasets: one per exported stream, written to a temporary directory then renamed.

Tasks write `<tmp>/<Stream>/part-<partition>.<ext>` through an OutputWriter (Parquet or CSV
through pyarrow, JSON lines); the driver renames the temporary directory (a sibling of the
output directory, so the rename is atomic) only when the whole job succeeded, and removes it
otherwise: a failed backtest leaves nothing in the output directory."""
import json
import os
import shutil
import uuid

import pyarrow as pa
import pyarrow.compute as pc

from cep.backtest.exceptions import SpecError
from cep.backtest.inputs import ARROW_TYPES
from cep.model.types import AttrType

EXTENSIONS = {"parquet": "parquet", "jsonl": "jsonl", "csv": "csv"}
FLUSH_EVENTS = 65536


class OutputWriter:
    """Collects one stream's output events of one task and writes them in chunks."""

    def __init__(self, tmp_dir, stream_id, definition, fmt, partition_id, bucket_ms):
        folder = os.path.join(tmp_dir, stream_id)
        os.makedirs(folder, exist_ok=True)
        self.path = os.path.join(folder, f"part-{partition_id:05d}.{EXTENSIONS[fmt]}")
        self.fmt, self.bucket_ms = fmt, bucket_ms
        self.attrs = definition.attributes
        ts_name = "timestamp" if all(a.name != "timestamp" for a in self.attrs) else "_timestamp"
        self.schema = pa.schema([(ts_name, pa.int64())] +
                                [(a.name, ARROW_TYPES[a.type]) for a in self.attrs])
        self.pending, self.writer, self.file = [], None, None
        self.count, self.first_ts, self.last_ts, self.buckets = 0, None, None, {}

    def add(self, pairs):
        self.pending.extend(pairs)
        if len(self.pending) >= FLUSH_EVENTS:
            self.flush()

    def flush(self):
        if not self.pending:
            return
        pairs, self.pending = self.pending, []
        ts = pa.array([p[0] for p in pairs], pa.int64())
        self._count(ts)
        if self.fmt == "jsonl":
            self._write_jsonl(ts, pairs)
            return
        cols = list(zip(*(p[1] for p in pairs))) or [()] * len(self.attrs)
        arrays = [ts] + [_array(c, a.type) for c, a in zip(cols, self.attrs)]
        table = pa.Table.from_arrays(arrays, schema=self.schema)
        if self.writer is None:
            self.writer = self._open()
        self.writer.write_table(table)

    def close(self):
        self.flush()
        if self.writer is not None:
            self.writer.close()
        if self.file is not None:
            self.file.close()

    def _open(self):
        if self.fmt == "parquet":
            import pyarrow.parquet as pq
            return pq.ParquetWriter(self.path, self.schema)
        import pyarrow.csv as pcsv
        return pcsv.CSVWriter(self.path, self.schema)

    def _write_jsonl(self, ts, pairs):
        if self.file is None:
            self.file = open(self.path, "w", encoding="utf-8")
        names = self.schema.names
        self.file.writelines(json.dumps(dict(zip(names, (t, *_plain(row)))), default=str) + "\n"
                             for t, (_, row) in zip(ts.to_pylist(), pairs))

    def _count(self, ts):
        self.count += len(ts)
        self.first_ts = ts[0].as_py() if self.first_ts is None else self.first_ts
        self.last_ts = ts[-1].as_py()
        counts = pc.value_counts(pc.divide(ts, self.bucket_ms))
        for k, n in zip(counts.field(0).to_pylist(), counts.field(1).to_pylist()):
            self.buckets[k] = self.buckets.get(k, 0) + n


def _array(values, attr_type):
    if attr_type == AttrType.OBJECT:
        values = [None if v is None else str(v) for v in values]
    return pa.array(values, ARROW_TYPES[attr_type])


def _plain(row):
    return [v if isinstance(v, (str, int, float, bool)) or v is None else str(v) for v in row]


def temp_output(output_dir, overwrite=False):
    """A fresh temporary directory beside `output_dir` (after checking it may be written)."""
    output_dir = os.path.abspath(output_dir)
    if os.path.exists(output_dir) and not os.path.isdir(output_dir):
        raise SpecError(f"--output {output_dir}: exists and is not a directory")
    if os.path.isdir(output_dir) and os.listdir(output_dir) and not overwrite:
        raise SpecError(f"--output {output_dir}: not empty (use --overwrite to replace it)")
    parent = os.path.dirname(output_dir)
    os.makedirs(parent, exist_ok=True)
    tmp = os.path.join(parent, f".{os.path.basename(output_dir)}.tmp-{uuid.uuid4().hex[:12]}")
    os.makedirs(tmp)
    return tmp


def commit(tmp, output_dir, streams):
    """Make every stream's folder exist (an empty one when nothing came out), then rename."""
    for sid in streams:
        os.makedirs(os.path.join(tmp, sid), exist_ok=True)
    output_dir = os.path.abspath(output_dir)
    if os.path.isdir(output_dir):
        old = f"{tmp}.old"
        os.rename(output_dir, old)
        os.rename(tmp, output_dir)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.rename(tmp, output_dir)


def discard(tmp):
    shutil.rmtree(tmp, ignore_errors=True)
