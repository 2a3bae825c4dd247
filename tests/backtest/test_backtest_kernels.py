"""Keyed tasks with numpy kernels (cep/backtest/keyed_task.py): the task's sort, which queries
the kernels take, and the kernel path against the engine path on the benchmark plan (a real
local[2] Spark job each): the same output files, row for row."""

import random

import numpy as np
import pyarrow as pa
import pytest

import cep
from benchmarks.backtest_bench import PLAN
from cep.backtest.columnar import SortedPartition, run_starts, sort_order
from cep.backtest.inputs import InputSpec
from cep.backtest.job import run_backtest
from cep.backtest.rewrite import kernel_queries, split_partitions, without_queries
from tests.backtest.conftest import read_output, write_parquet


@pytest.mark.parametrize("span", [3, 10**6])  # ties (lexsort) and unique pairs (packed)
def test_sort_order_is_key_time_input_row(span):
    rng = np.random.default_rng(span)
    for _ in range(50):
        n = int(rng.integers(0, 300))
        codes = rng.integers(-1, 6, n).astype(np.int64)
        ts = rng.choice(span, n, replace=span < n).astype(np.int64) + 1_700_000_000_000
        seq, streams = rng.permutation(n).astype(np.int64), rng.integers(0, 2, n)
        assert (sort_order(codes, ts, seq) == np.lexsort((seq, ts, codes))).all()
        assert (sort_order(codes, ts, seq, streams) == np.lexsort((seq, streams, ts, codes))).all()


def test_sorted_partition_views_and_nulls():
    batch = pa.RecordBatch.from_pydict(
        {
            "__ts": pa.array([5, 1, 2, 1, 3], pa.int64()),
            "__seq": pa.array([0, 1, 2, 3, 4], pa.int64()),
            "c0_0": ["b", "a", "b", "b", "a"],
            "c0_1": pa.array([1.0, 2.0, 3.0, 4.0, None]),
        }
    )
    part = SortedPartition([batch], "c0_0", (("S", 2),))
    attrs = cep.compile("define stream S (k string, v double);").streams[0].attributes
    assert part.ts.tolist() == [1, 2, 5, 1, 3] and part.view(0, attrs) is None  # b first seen
    clean = SortedPartition([batch.slice(0, 4)], "c0_0", (("S", 2),))
    ts, starts, cols = clean.view(0, attrs)
    assert ts.tolist() == [1, 2, 5, 1] and starts.tolist() == [0, 3, 4]
    assert cols["k"].dtype == object and cols["k"].tolist() == ["b", "b", "b", "a"]
    assert cols["v"].tolist() == [4.0, 3.0, 1.0, 2.0] and run_starts(np.array([])).tolist() == [0]


def test_kernel_queries_take_only_outputs_nobody_reads():
    plan = split_partitions(cep.compile(PLAN))
    taken = kernel_queries(plan, {"Trades"}, ("AvgPrice", "Jumps"))
    assert sorted(k.output_stream for _, k in taken) == ["AvgPrice", "Jumps"]
    assert without_queries(plan, [q for q, _ in taken]) == (None, set())
    chained = cep.compile(
        PLAN.replace("end;", "end;\nfrom AvgPrice[avgPrice > 0] select sym insert into Up;")
    )
    taken = kernel_queries(split_partitions(chained), {"Trades"}, ("AvgPrice", "Jumps", "Up"))
    assert [k.output_stream for _, k in taken] == ["Jumps"]  # AvgPrice feeds another query
    rest, read = without_queries(split_partitions(chained), [q for q, _ in taken])
    assert rest is not None and read == {"Trades", "AvgPrice"}


def _events(n, keys, nulls=False):
    rnd = random.Random(7)
    events = []
    for i in range(n):
        price = None if nulls and i % 97 == 0 else round(100 * (1 + rnd.gauss(0, 0.03)), 2)
        # every 5th event repeats the previous timestamp: ties inside a key too
        events.append(
            (
                1_700_000_000_000 + (i - (i % 5 == 4)) * 40,
                (f"K{rnd.randrange(keys):03d}", price, rnd.randrange(0, 4)),
            )
        )
    rnd.shuffle(events)
    return events


@pytest.mark.slow
def test_kernel_path_equals_engine_path(spark, tmp_path):
    definition = cep.compile(PLAN).streams[0]
    data = write_parquet(tmp_path / "t.parquet", definition, _events(30_000, 200))
    nulls = write_parquet(tmp_path / "n.parquet", definition, _events(3_000, 50, nulls=True))
    runs = {}
    for name, path in (("plain", data), ("nulls", nulls)):
        for kernels in (True, False):
            out = str(tmp_path / f"{name}-{kernels}")
            summary = run_backtest(
                PLAN,
                [InputSpec("Trades", path, "parquet")],
                out,
                spark=spark,
                kernels=kernels,
                allow_nulls=True,
            )
            runs[name, kernels] = (
                summary,
                {s: sorted(read_output(out, s), key=repr) for s in ("AvgPrice", "Jumps")},
            )
    for name in ("plain", "nulls"):
        (k_sum, k_out), (e_sum, e_out) = runs[name, True], runs[name, False]
        assert k_out == e_out and k_sum.events_out == e_sum.events_out, name
        assert k_out["Jumps"] and k_out["AvgPrice"]
        assert "engine" in e_sum.task_seconds and "kernels" not in e_sum.task_seconds
    assert "kernels" in runs["plain", True][0].task_seconds
    assert "engine" not in runs["plain", True][0].task_seconds  # both queries on kernels
    assert "engine" in runs["nulls", True][0].task_seconds  # nulls: the engine


@pytest.mark.parametrize("fmt", ["parquet", "jsonl", "csv"])
def test_column_writer_writes_what_the_row_writer_writes(tmp_path, fmt):
    from cep.backtest.outputs import ColumnWriter, OutputWriter

    definition = cep.compile(
        "define stream O (sym string, avg double, n long, f float, ok bool);"
    ).streams[0]
    rows = [
        (1_000, ("a", 1.5, 3, 0.5, True)),
        (61_000, ("b", 2.25, 4, 0.25, False)),
        (59_999, ("a", -0.0, 5, 3.0, True)),
    ]
    # floats the engine gets from a float32 column (one decimal value would differ in JSON)
    rw = OutputWriter(str(tmp_path / "rows"), "O", definition, fmt, 0, 60_000)
    rw.add(rows)
    rw.close()
    cw = ColumnWriter(str(tmp_path / "cols"), "O", definition, fmt, 0, 60_000, suffix="-k0")
    columns = list(zip(*(r for _, r in rows)))
    cw.write_columns(
        np.array([t for t, _ in rows], np.int64),
        {
            "sym": np.array(columns[0], object),
            "avg": np.array(columns[1]),
            "n": np.array(columns[2], np.int64),
            "f": np.array(columns[3], np.float32),
            "ok": np.array(columns[4]),
        },
    )
    cw.close()
    assert (cw.count, cw.buckets) == (rw.count, rw.buckets) == (3, {0: 2, 1: 1})
    assert cw.path.endswith(f"part-00000-k0.{fmt}")
    with open(rw.path, "rb") as a, open(cw.path, "rb") as b:
        if fmt == "parquet":
            import pyarrow.parquet as pq

            assert pq.read_table(a).equals(pq.read_table(b))
        else:
            assert a.read() == b.read()
