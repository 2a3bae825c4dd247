"""Input datasets: `--input STREAM=PATH`, read and checked against the stream definitions.

Parquet (a file or a directory of files) is checked from its schema and row-group statistics
through pyarrow, without reading the data; JSON lines and CSV are read with pyarrow (CSV with
the stream's column types) and staged as Parquet for Spark. Every problem is an InputError
naming the file and the column: a missing column, a type the attribute cannot hold, an int
beyond 32 bits for an `int`, nulls (in the timestamp always; in attributes unless allowed)."""

import os
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from cep.backtest.exceptions import InputError, SpecError
from cep.model.types import AttrType

FORMATS = {
    ".parquet": "parquet",
    ".pq": "parquet",
    ".jsonl": "jsonl",
    ".json": "jsonl",
    ".ndjson": "jsonl",
    ".csv": "csv",
}
ARROW_TYPES = {
    AttrType.STRING: pa.string(),
    AttrType.INT: pa.int32(),
    AttrType.LONG: pa.int64(),
    AttrType.FLOAT: pa.float32(),
    AttrType.DOUBLE: pa.float64(),
    AttrType.BOOL: pa.bool_(),
    AttrType.OBJECT: pa.string(),
}
INT32 = (-(2**31), 2**31 - 1)


@dataclass
class InputSpec:
    stream: str
    path: str
    fmt: str


@dataclass
class CheckedInput:
    """A dataset fit for its stream: `parquet` is what Spark reads (the file, or its staging)."""

    stream: str
    path: str
    parquet: str
    attributes: tuple  # of model Attribute
    ts_column: str
    rows: int
    ts_range: tuple = None  # (first, last) epoch ms for integer timestamps, from statistics


def parse_spec(text):
    """`STREAM=PATH` -> InputSpec (format from the extension; a directory is Parquet)."""
    stream, sep, path = text.partition("=")
    if not sep or not stream or not path:
        raise SpecError(f"--input {text!r}: expected STREAM=PATH")
    if os.path.isdir(path):
        return InputSpec(stream, path, "parquet")
    fmt = FORMATS.get(os.path.splitext(path)[1].lower())
    if fmt is None:
        raise SpecError(
            f"--input {text!r}: unknown format of {path} (use .parquet, .jsonl or "
            ".csv, or a directory of Parquet files)"
        )
    return InputSpec(stream, path, fmt)


def check_input(spec, definition, ts_column, staging_dir, allow_nulls=False):
    """The CheckedInput of `spec` for stream `definition`; raises InputError."""
    if not os.path.exists(spec.path):
        raise InputError(f"{spec.path}: no such file or directory (input of {spec.stream})")
    if spec.fmt == "parquet":
        dataset, parquet = _open_parquet(spec.path), spec.path
    else:
        table = _read_text(spec, definition, ts_column)
        parquet = os.path.join(staging_dir, f"{spec.stream}.parquet")
        import pyarrow.parquet as pq

        pq.write_table(table, parquet)
        dataset = ds.dataset(parquet, format="parquet")
    _check_schema(spec, dataset.schema, definition, ts_column)
    ts_range = _check_values(spec, dataset, definition, ts_column, allow_nulls)
    return CheckedInput(
        spec.stream,
        spec.path,
        parquet,
        definition.attributes,
        ts_column,
        dataset.count_rows(),
        ts_range,
    )


def _open_parquet(path):
    try:
        return ds.dataset(path, format="parquet")
    except (pa.ArrowInvalid, OSError) as exc:
        raise InputError(f"{path}: not a readable Parquet dataset ({_short(exc)})") from None


def _read_text(spec, definition, ts_column):
    types = {a.name: ARROW_TYPES[a.type] for a in definition.attributes}
    types[ts_column] = pa.int64()
    try:
        if spec.fmt == "csv":
            import pyarrow.csv as pcsv

            return pcsv.read_csv(
                spec.path,
                convert_options=pcsv.ConvertOptions(column_types=types, strings_can_be_null=False),
            )
        import pyarrow.json as pjson

        present = _json_columns(spec.path)
        schema = pa.schema([(n, t) for n, t in types.items() if n in present])
        return pjson.read_json(
            spec.path,
            parse_options=pjson.ParseOptions(
                explicit_schema=schema, unexpected_field_behavior="ignore"
            ),
        )
    except pa.ArrowInvalid as exc:
        raise InputError(
            f"{spec.path}: {_csv_column(spec, _short(exc))} (input of {spec.stream})"
        ) from None


def _csv_column(spec, message):
    """Arrow says `CSV column #2`: say the column's name from the header line too."""
    import re

    found = re.search(r"CSV column #(\d+)", message)
    if spec.fmt != "csv" or not found:
        return message
    with open(spec.path, encoding="utf-8") as f:
        header = f.readline().strip().split(",")
    index = int(found.group(1))
    if index < len(header):
        name = header[index].strip().strip('"')
        message = message.replace(found.group(0), f"column {name!r} (CSV column #{index})")
    return message


def _json_columns(path):
    import json

    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                try:
                    first = json.loads(line)
                except ValueError as exc:
                    raise InputError(f"{path}: line 1 is not JSON ({exc})") from None
                return set(first) if isinstance(first, dict) else set()
    return set()


def _check_schema(spec, schema, definition, ts_column):
    names = set(schema.names)
    missing = [n for n in (ts_column, *(a.name for a in definition.attributes)) if n not in names]
    if missing:
        raise InputError(
            f"{spec.path}: column{'s' if len(missing) > 1 else ''} "
            f"{', '.join(repr(m) for m in missing)} missing: stream {spec.stream} needs "
            f"{ts_column!r} and {', '.join(a.name for a in definition.attributes)}; the file "
            f"has {', '.join(schema.names) or 'no columns'}"
        )
    ts_type = schema.field(ts_column).type
    if not (pa.types.is_integer(ts_type) or pa.types.is_timestamp(ts_type)):
        raise InputError(
            f"{spec.path}: column {ts_column!r} (the timestamp) has type {ts_type}; "
            "it must be an integer (epoch ms) or a timestamp"
        )
    for attr in definition.attributes:
        have = schema.field(attr.name).type
        if not _fits(have, attr.type):
            raise InputError(
                f"{spec.path}: column {attr.name!r} has type {have}, but stream "
                f"{spec.stream} declares {attr.name} {attr.type}"
            )


def _fits(arrow_type, attr_type):
    t = arrow_type.value_type if pa.types.is_dictionary(arrow_type) else arrow_type
    if attr_type == AttrType.OBJECT:
        return True
    if attr_type == AttrType.STRING:
        return pa.types.is_string(t) or pa.types.is_large_string(t)
    if attr_type == AttrType.BOOL:
        return pa.types.is_boolean(t)
    if attr_type in (AttrType.INT, AttrType.LONG):
        return pa.types.is_integer(t)
    return pa.types.is_integer(t) or pa.types.is_floating(t)


def _check_values(spec, dataset, definition, ts_column, allow_nulls):
    """Nulls and int ranges, from row-group statistics where the files have them; returns
    the (first, last) integer timestamps, or None."""
    checks = [(ts_column, None)] + [(a.name, a.type) for a in definition.attributes]
    ts_int = pa.types.is_integer(dataset.schema.field(ts_column).type)
    ts_range = None
    for name, attr_type in checks:
        needs_range = attr_type == AttrType.INT and dataset.schema.field(name).type.bit_width > 32
        needs_range = needs_range or (name == ts_column and ts_int)
        if name != ts_column and allow_nulls and not needs_range:
            continue
        nulls, low, high = _column_facts(dataset, name, needs_range)
        if nulls and (name == ts_column or not allow_nulls):
            what = "the timestamp" if name == ts_column else f"attribute {name}"
            raise InputError(
                f"{spec.path}: column {name!r} ({what} of {spec.stream}) has "
                f"{nulls} null value{'s' if nulls > 1 else ''}"
            )
        if needs_range and low is not None and (low < INT32[0] or high > INT32[1]):
            if name == ts_column:
                ts_range = (low, high)
                continue
            raise InputError(
                f"{spec.path}: column {name!r} holds {low if low < INT32[0] else high}"
                f", beyond the 32-bit range of {spec.stream}'s int {name}"
            )
        if name == ts_column and low is not None:
            ts_range = (low, high)
    return ts_range


def _column_facts(dataset, name, needs_range):
    """(null count, min, max) of a column: statistics when every row group has them."""
    try:
        facts = [_stats_facts(f, name, needs_range) for f in dataset.get_fragments()]
    except (AttributeError, KeyError):
        facts = [None]
    if all(f is not None for f in facts) and facts:
        nulls = sum(f[0] for f in facts)
        ranged = [f for f in facts if f[1] is not None]
        if not needs_range or len(ranged) == len(facts):
            return (
                nulls,
                min((f[1] for f in ranged), default=None),
                max((f[2] for f in ranged), default=None),
            )
    column = dataset.to_table(columns=[name]).column(0)
    bounds = pc.min_max(column) if needs_range else None
    return (
        column.null_count,
        bounds["min"].as_py() if bounds else None,
        bounds["max"].as_py() if bounds else None,
    )


def _stats_facts(fragment, name, needs_range):
    meta = fragment.metadata
    index = meta.schema.to_arrow_schema().get_field_index(name)
    nulls, low, high = 0, None, None
    for g in range(meta.num_row_groups):
        stats = meta.row_group(g).column(index).statistics
        if stats is None or not stats.has_null_count:
            return None
        nulls += stats.null_count
        if needs_range and stats.has_min_max:
            low = stats.min if low is None else min(low, stats.min)
            high = stats.max if high is None else max(high, stats.max)
    return nulls, low, high


def _short(exc):
    return str(exc).strip().splitlines()[0][:300]
