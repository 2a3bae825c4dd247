"""A generated dataset with 10,000 keys through a partitioned plan (time window aggregate and a
pattern; both on keyed kernels), as `cep backtest` in its own process on the embedded standalone cluster with 2
one-core executors: output equal to `cep run`'s (its code path, over the same events).

200,000 events: 20 a key on average over 10 minutes of event time, so both the window
aggregate and the pattern (its jumps asserted non-empty) run on every key of every task. The
issue's size, 1M events, took 72 s in all at load 2 and up to 10 min on a loaded machine, most
of it the same computation five times over: CEP_BACKTEST_SCALE_EVENTS=1000000 runs it; the
reference `cep run` is computed while the backtest runs in its own process;
benchmarks/backtest_bench.py times 20M."""

import json
import os
import random
import subprocess
import sys

import pyarrow.parquet as pq
import pytest

import cep
from cep.engine.offline import run as cep_run
from tests.backtest.conftest import read_output, write_parquet

PLAN = """@Plan:name('ScaleCheck')
define stream Trades (sym string, price double, qty int);
partition with (sym of Trades) begin
  from Trades[qty > 1]#window.time(1 min)
  select sym, avg(price) as avgPrice, count() as trades insert into AvgPrice;
  from every e1=Trades -> e2=Trades[price > e1.price * 1.05] within 10 sec
  select e1.sym as sym, e1.price as before, e2.price as after insert into Jumps;
end;
"""
EVENTS = int(os.environ.get("CEP_BACKTEST_SCALE_EVENTS", "200000"))
KEYS = 10_000


@pytest.fixture(scope="module")
def two_executor_cluster(tmp_path_factory):
    from tests.backtest.conftest import _require_java
    from topology.cluster import ensure_cluster, stop_cluster
    from topology.exceptions import ClusterStartError
    from topology.spark_settings import load_spark_settings

    _require_java()
    settings = load_spark_settings(
        overrides={
            "spark.state_dir": str(tmp_path_factory.mktemp("backtest-spark")),
            "spark.slots": 2,
            "spark.worker_memory": "4g",
        }
    )
    try:
        cluster = ensure_cluster(settings)
    except ClusterStartError:  # a loaded machine may take longer than 60 s: once more
        stop_cluster(settings)
        cluster = ensure_cluster(settings)
    yield cluster
    stop_cluster(settings)


def generated():
    rnd = random.Random(15)
    return [
        (
            1_700_000_000_000 + i * 3,
            (
                f"K{rnd.randrange(KEYS):05d}",
                round(100 * (1 + rnd.gauss(0, 0.03)), 2),
                rnd.randrange(1, 6),
            ),
        )
        for i in range(EVENTS)
    ]


def reference(events):
    got = {}

    def emit(e):
        got.setdefault(e["stream"], []).append((e["timestamp"], tuple(e["data"])))

    lines = [
        json.dumps({"stream": "Trades", "timestamp": ts, "data": list(row)}) for ts, row in events
    ]
    assert cep_run(cep.compile(PLAN), lines, emit, print, playback=True, on_error="fail")
    return got


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_generated_keys_on_two_executors_equal_cep_run(two_executor_cluster, tmp_path):
    events = generated()
    shuffled = events[:]
    random.Random(1).shuffle(shuffled)  # the job sorts
    data = write_parquet(tmp_path / "trades.parquet", cep.compile(PLAN).streams[0], shuffled)
    plan = tmp_path / "scale.siddhiql"
    plan.write_text(PLAN)
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "cep.cli.main",
            "backtest",
            str(plan),
            "--input",
            f"Trades={data}",
            "--output",
            str(out),
            "--spark-master",
            two_executor_cluster.master_url,
            "--executors",
            "2",
            "--json",
            "--no-progress",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
    )
    try:
        want = reference(events)  # while the backtest runs (its own process)
        stdout, stderr = proc.communicate(timeout=800)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, stderr[-2000:]
    summary = json.loads(stdout)
    assert summary["mode"] == "keyed" and summary["executors"] == 2 and summary["tasks"] == 8
    assert summary["events_in"] == EVENTS
    assert "kernels" in summary["task_seconds"]  # the benchmark plan's queries ran on kernels
    assert want["AvgPrice"] and want.get("Jumps")
    for stream in ("AvgPrice", "Jumps"):
        have = read_output(str(out), stream)
        assert summary["events_out"][stream] == len(want[stream])
        assert sorted(have) == sorted(want[stream]), stream
    assert pq.read_table(str(out / "AvgPrice")).num_rows == len(want["AvgPrice"])
