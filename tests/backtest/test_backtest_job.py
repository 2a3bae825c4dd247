"""The job end to end on real Spark (local[2]): unsorted input sorted by the job, formats and
summary, a failing task leaves nothing in the output directory; the CLI's bad-input errors."""

import argparse
import io
import json
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import cep
from cep.backtest.exceptions import BacktestError, SpecError
from cep.backtest.inputs import InputSpec
from cep.backtest.job import run_backtest
from tests.backtest.conftest import write_parquet

PLAN = """@Plan:name('Spikes')
define stream S (sym string, price double, note string);
partition with (sym of S) begin
  @info(name='avg3') from S#window.length(3) select sym, avg(price) as a insert into Avg;
end;
from S[price > 50.0] select sym, price insert into High;
"""
S = cep.compile(PLAN).streams[0]


def events(n=300):
    return [(1000 + i * 7, (f"k{i % 13}", float((i * 37) % 100), "ok")) for i in range(n)]


@pytest.mark.slow
def test_unsorted_input_is_sorted_by_the_job_and_jsonl_output_has_a_summary(spark, tmp_path):
    rows = events()
    path = write_parquet(tmp_path / "s.parquet", S, list(reversed(rows)))
    out = tmp_path / "out"
    summary = run_backtest(
        PLAN, [InputSpec("S", path, "parquet")], str(out), fmt="jsonl", spark=spark
    )
    assert summary.mode == "keyed" and summary.events_in == 300
    assert (summary.first_ts, summary.last_ts) == (1000, 1000 + 299 * 7)
    rt = cep.ExecutionPlanRuntime(cep.compile(PLAN), playback=True)  # the in-order reference
    want = {"Avg": [], "High": []}
    for sid in want:
        rt.add_callback(
            sid, lambda pairs, sid=sid: want[sid].extend((ts, list(r)) for ts, r in pairs)
        )
    for ts, row in rows:
        rt.input_handler("S").send(row, ts)
    for sid, expected in want.items():
        got = []
        for name in sorted(os.listdir(out / sid)):
            for line in (out / sid / name).read_text().splitlines():
                obj = json.loads(line)
                got.append((obj.pop("timestamp"), list(obj.values())))
        assert sorted(got, key=repr) == sorted(expected, key=repr)
        assert summary.events_out[sid] == len(expected)
        for key in set(r[0] for _, r in expected):  # per key: emission order is kept
            assert [e for e in got if e[1][0] == key] == [e for e in expected if e[1][0] == key]
    stored = json.loads((out / "_summary.json").read_text())
    assert stored["events_in"] == 300 and stored["events_out"] == summary.events_out
    assert sum(n for _, n in stored["out_over_time"]["High"]) == summary.events_out["High"]


@pytest.mark.slow
def test_a_failing_task_leaves_nothing_in_the_output_directory(spark, tmp_path):
    rows = events(200)
    good = write_parquet(tmp_path / "good.parquet", S, rows)
    table = pq.read_table(good)
    notes = table.column("note").combine_chunks()
    data = notes.buffers()[2].to_pybytes()
    corrupt = data[:-2] + b"\xff\xfe"  # the last row's note is not UTF-8
    bad_notes = pa.Array.from_buffers(
        pa.string(), len(notes), [None, notes.buffers()[1], pa.py_buffer(corrupt)]
    )
    bad = str(tmp_path / "bad.parquet")
    pq.write_table(table.set_column(3, "note", bad_notes), bad)
    out = tmp_path / "out"
    with pytest.raises(BacktestError) as err:
        run_backtest(PLAN, [InputSpec("S", bad, "parquet")], str(out), spark=spark)
    assert "the backtest job failed" in str(err.value) and "Traceback" not in str(err.value)
    assert not out.exists()
    assert [p for p in os.listdir(tmp_path) if p.startswith(".out.tmp")] == []


def test_a_non_empty_output_directory_is_refused_before_any_work(tmp_path):
    path = write_parquet(tmp_path / "s.parquet", S, events(5))
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "keep.txt").write_text("x")
    with pytest.raises(SpecError, match="not empty"):
        run_backtest(PLAN, [InputSpec("S", path, "parquet")], str(tmp_path / "out"))
    assert os.listdir(tmp_path / "out") == ["keep.txt"]


def test_cli_bad_input_exits_2_naming_column_and_file_and_writes_nothing(tmp_path):
    from cep.cli.backtest import main

    plan = tmp_path / "p.siddhiql"
    plan.write_text(PLAN)
    data = tmp_path / "s.parquet"
    pq.write_table(
        pa.table({"timestamp": [1], "sym": ["a"], "price": ["high"], "note": ["x"]}), str(data)
    )
    err = io.StringIO()
    args = argparse.Namespace(
        plan=str(plan),
        input=[f"S={data}"],
        output=str(tmp_path / "o"),
        format="parquet",
        spark_master=None,
        executors=1,
        timestamp_column="timestamp",
        tenant="-1234",
        allow_nulls=False,
        overwrite=False,
        no_progress=True,
        json=False,
    )
    assert main(args, stdout=io.StringIO(), stderr=err) == 2
    assert f"{data}: column 'price' has type string" in err.getvalue()
    assert not (tmp_path / "o").exists()
    args.input = ["Nope=" + str(data)]
    assert main(args, stdout=io.StringIO(), stderr=err) == 2
    assert "the plan defines no stream Nope" in err.getvalue()
