"""Output datasets: one per exported stream, written to a temporary directory then renamed.

Tasks write `<tmp>/<Stream>/part-<partition>.<ext>` through an OutputWriter (the engine's
events; Parquet or CSV through pyarrow, JSON lines) and `part-<partition>-k<i>.<ext>` through
a ColumnWriter (a keyed kernel's numpy columns, written without rows); the driver renames the temporary directory (a sibling of the
output directory, so the rename is atomic) only when the whole job succeeded, and removes it
otherwise: a failed backtest leaves nothing in the output directory."""

import json
import math
import os
import shutil
import uuid

import numpy as np
import pyarrow as pa

from cep.backtest.exceptions import SpecError
from cep.backtest.inputs import ARROW_TYPES
from cep.model.types import AttrType

try:  # JSON lines in one C call per chunk (json.dumps per row is the slow part of a jsonl job)
    import msgspec

    _ENCODE_LINES = msgspec.json.Encoder().encode_lines
except ImportError:
    msgspec = None

EXTENSIONS = {"parquet": "parquet", "jsonl": "jsonl", "csv": "csv"}
FLUSH_EVENTS = 65536


def output_schema(attrs):
    """`timestamp` (or `_timestamp` when an attribute is so named) and the attributes."""
    ts_name = "timestamp" if all(a.name != "timestamp" for a in attrs) else "_timestamp"
    return pa.schema([(ts_name, pa.int64())] + [(a.name, ARROW_TYPES[a.type]) for a in attrs])


def bucket_counts(ts, bucket_ms, into):
    """Add the counts of int64 timestamps per `bucket_ms` bucket (truncating, as pc.divide)."""
    ts = np.asarray(ts, dtype=np.int64)
    if not len(ts):
        return into
    q = ts // bucket_ms
    q += (ts < 0) & (ts % bucket_ms != 0)  # toward zero
    keys, counts = np.unique(q, return_counts=True)
    for k, n in zip(keys.tolist(), counts.tolist()):
        into[k] = into.get(k, 0) + n
    return into


class OutputWriter:
    """Collects one stream's output events of one task and writes them in chunks."""

    def __init__(self, tmp_dir, stream_id, definition, fmt, partition_id, bucket_ms, suffix=""):
        folder = os.path.join(tmp_dir, stream_id)
        os.makedirs(folder, exist_ok=True)
        self.path = os.path.join(folder, f"part-{partition_id:05d}{suffix}.{EXTENSIONS[fmt]}")
        self.fmt, self.bucket_ms = fmt, bucket_ms
        self.attrs = definition.attributes
        self.schema = output_schema(self.attrs)
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

            strings = [f.name for f in self.schema if pa.types.is_string(f.type)]
            return pq.ParquetWriter(self.path, self.schema, use_dictionary=strings)
        import pyarrow.csv as pcsv

        return pcsv.CSVWriter(self.path, self.schema)

    def _write_jsonl(self, ts, pairs):
        if self.file is None:
            self.file = open(self.path, "w", encoding="utf-8")
        names = self.schema.names
        rows = [dict(zip(names, (t, *row))) for t, (_, row) in zip(ts.to_pylist(), pairs)]
        if msgspec is not None and not any(a.type == AttrType.OBJECT for a in self.attrs):
            text = _ENCODE_LINES(rows)
            # msgspec writes NaN and infinities as null: such a chunk goes through json
            if b"null" not in text or not _nonfinite(pairs):
                self.file.write(text.decode())
                return
        self.file.writelines(json.dumps({k: _plain1(v) for k, v in r.items()}) + "\n" for r in rows)

    def _count(self, ts):
        self.count += len(ts)
        self.first_ts = ts[0].as_py() if self.first_ts is None else self.first_ts
        self.last_ts = ts[-1].as_py()
        bucket_counts(ts.to_numpy(), self.bucket_ms, self.buckets)


class ColumnWriter(OutputWriter):
    """A keyed kernel's output of one task: numpy columns written as one table."""

    def write_columns(self, ts, columns):
        """`ts`: int64 array; `columns`: name -> numpy array, every attribute of the stream."""
        if not len(ts):
            return
        self.count += len(ts)
        lo, hi = int(ts.min()), int(ts.max())
        self.first_ts = lo if self.first_ts is None else min(lo, self.first_ts)
        self.last_ts = hi if self.last_ts is None else max(hi, self.last_ts)
        bucket_counts(ts, self.bucket_ms, self.buckets)
        arrays = [pa.array(ts, pa.int64())] + [_column(columns[a.name], a.type) for a in self.attrs]
        table = pa.Table.from_arrays(arrays, schema=self.schema)
        if self.fmt == "jsonl":
            self._write_jsonl(
                arrays[0], [(None, r) for r in zip(*(a.to_pylist() for a in arrays[1:]))]
            )
            return
        if self.writer is None:
            self.writer = self._open()
        self.writer.write_table(table)


def _column(values, attr_type):
    """A numpy column as the Arrow type of `attr_type` (as the engine's values would convert)."""
    values = np.asarray(values)
    if attr_type == AttrType.OBJECT or (attr_type == AttrType.STRING and values.dtype.kind != "O"):
        return _array(values.tolist(), attr_type)
    if attr_type == AttrType.FLOAT and values.dtype != np.float32:
        values = values.astype(np.float32)
    return pa.array(values, ARROW_TYPES[attr_type])


def _array(values, attr_type):
    if attr_type == AttrType.OBJECT:
        values = [None if v is None else str(v) for v in values]
    return pa.array(values, ARROW_TYPES[attr_type])


def _plain(row):
    return [_plain1(v) for v in row]


def _plain1(v):
    return v if isinstance(v, (str, int, float, bool)) or v is None else str(v)


def _nonfinite(pairs):
    return any(type(v) is float and not math.isfinite(v) for _, row in pairs for v in row)


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
