"""Benchmark `cep backtest`: a partitioned filter + time-window aggregate + pattern plan over a
generated Parquet dataset, Parquet out, with 1 and 2 executors; prints medians as JSON.

    .venv/bin/python benchmarks/backtest_bench.py [--events 20000000] [--keys 10000]
        [--runs 3] [--executors 1,2] [--master local|embedded]

`events_per_s` is events in / the job's run time (reading, sorting, the engine, writing the
outputs; the Spark session's start is `session_s`, outside it). Where the time goes:
`task_s` sums the tasks' wall seconds per phase (gather = waiting for the shuffle's Arrow
batches, sort = numpy sort and columns, kernels, engine, write); `floor_s` is, in the same
session right after the backtest, the job without the task's work: read Parquet, repartition
by key, hand the Arrow batches to Python, count (Spark's own share). The dataset is generated once
per (events, keys) under --cache-dir (default /var/tmp/sparkcep-bench, outside the repo; seeded random walk per key, timestamps 1 ms apart,
row order shuffled in blocks so the job has to sort)."""

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

PLAN = """@Plan:name('BacktestBench')
define stream Trades (sym string, price double, qty int);
partition with (sym of Trades) begin
  @info(name='avg1min')
  from Trades[qty > 0]#window.time(1 min)
  select sym, avg(price) as avgPrice, count() as trades insert into AvgPrice;
  @info(name='jump')
  from every e1=Trades -> e2=Trades[price > e1.price * 1.05] within 10 sec
  select e1.sym as sym, e1.price as before, e2.price as after insert into Jumps;
end;
"""


CACHE = os.environ.get("SPARKCEP_BENCH_CACHE", "/var/tmp/sparkcep-bench")


def dataset(events, keys, cache=CACHE):
    """The generated Parquet file (made once)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = os.path.join(cache, f"backtest-{events}-{keys}.parquet")
    if os.path.exists(path):
        return path
    os.makedirs(os.path.dirname(path), exist_ok=True)
    rng = np.random.default_rng(15)
    key = rng.integers(0, keys, events)
    steps = rng.normal(0, 0.02, events)
    price = 100 * np.exp(steps)  # price moves around 100 per event: some 5% jumps
    ts = 1_700_000_000_000 + np.arange(events, dtype=np.int64)
    blocks = np.arange(0, events, 50_000)
    rng.shuffle(blocks)  # blocks out of order: the job must sort
    order = np.concatenate([np.arange(b, min(b + 50_000, events)) for b in blocks])
    names = np.array([f"K{k:05d}" for k in range(keys)], dtype=object)
    table = pa.table(
        {
            "timestamp": ts[order],
            "sym": pa.array(names[key[order]], pa.string()),
            "price": price[order],
            "qty": pa.array((key[order] % 7) + 1, pa.int32()),
        }
    )
    pq.write_table(table, path + ".tmp", row_group_size=1_000_000)
    os.rename(path + ".tmp", path)
    return path


def _count(batches):
    import pyarrow as pa

    yield pa.RecordBatch.from_pydict({"n": [sum(b.num_rows for b in batches)]})


def floor_seconds(spark, path):
    """The job's Spark part alone: the same frame, repartitioned as the job does, counted."""
    import cep
    from cep.backtest import job, planner
    from cep.backtest.inputs import InputSpec, check_input

    plan = cep.compile(PLAN)
    checked = [
        check_input(InputSpec("Trades", path, "parquet"), plan.streams[0], "timestamp", None)
    ]
    job._size_splits(spark, checked)
    frame, key = job._events_frame(spark, checked, planner.plan_mode(plan, {"Trades"}))
    parts = max(
        job.PARTS_PER_CORE * spark.sparkContext.defaultParallelism,
        -(-checked[0].rows // job.ROWS_PER_TASK),
    )
    started = time.monotonic()
    n = sum(r.n for r in frame.repartition(parts, key).mapInArrow(_count, "n long").collect())
    assert n == checked[0].rows
    return time.monotonic() - started


def one_run(path, executors, master, kernels=True):
    from cep.backtest.inputs import InputSpec
    from cep.backtest.job import run_backtest
    from cep.backtest.session import app_name, spark_session

    started = time.monotonic()
    load = os.getloadavg()[0]
    spark = spark_session(
        app_name("BacktestBench", "-1234"),
        f"local[{executors}]" if master == "local" else master,
        executors,
    )
    session_s = time.monotonic() - started
    out = tempfile.mkdtemp(prefix="backtest-bench-")
    try:
        s = run_backtest(
            PLAN,
            [InputSpec("Trades", path, "parquet")],
            os.path.join(out, "o"),
            spark=spark,
            kernels=kernels,
        )
        floor = floor_seconds(spark, path)
        return {
            "session_s": round(session_s, 2),
            "run_s": round(s.run_seconds, 2),
            "events_per_s": round(s.rate),
            "floor_s": round(floor, 2),
            "task_s": s.task_seconds,
            "events_in": s.events_in,
            "mode": s.mode,
            "out": s.events_out,
            "tasks": s.tasks,
            "executors": s.executors,
            "load": [round(load, 2), round(os.getloadavg()[0], 2)],
        }
    finally:
        spark.stop()
        shutil.rmtree(out, ignore_errors=True)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--events", type=int, default=20_000_000)
    p.add_argument("--keys", type=int, default=10_000)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--executors", default="1,2")
    p.add_argument("--master", default="local", help="local (local[N]) or embedded")
    p.add_argument("--cache-dir", default=CACHE, help="where the generated dataset is kept")
    p.add_argument("--generate-only", action="store_true", help="make the dataset and stop")
    p.add_argument("--no-kernels", action="store_true", help="the engine for every query")
    args = p.parse_args(argv)
    path = dataset(args.events, args.keys, args.cache_dir)
    if args.generate_only:
        print(path)
        return
    result = {
        "events": args.events,
        "keys": args.keys,
        "master": args.master,
        "kernels": not args.no_kernels,
        "python": platform.python_version(),
        "load_before": os.getloadavg(),
        "results": {},
    }
    for n in (int(x) for x in args.executors.split(",")):
        runs = []
        for _ in range(args.runs):
            runs.append(one_run(path, n, args.master, not args.no_kernels))
            print(json.dumps({"executors": n, **runs[-1]}), file=sys.stderr, flush=True)
        result["results"][n] = {
            "median_events_per_s": statistics.median(r["events_per_s"] for r in runs),
            "median_run_s": statistics.median(r["run_s"] for r in runs),
            "median_floor_s": statistics.median(r["floor_s"] for r in runs),
            "runs": runs,
        }
    result["load_after"] = os.getloadavg()
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
