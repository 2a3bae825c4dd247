"""Benchmark the keyed kernels (cep/engine/columnar/keyed) on the backtest benchmark plan's two
queries (benchmarks/backtest_bench.py PLAN): events per CPU-second of each kernel over one
partition's events sorted by (key, timestamp), medians of --runs, next to the row engine's
figure on the same events (fed key by key as cep/backtest/task.py does) and their ratio.

    .venv/bin/python benchmarks/keyed_kernel_bench.py [--events 1000000] [--keys 10000]
        [--runs 3] [--engine-runs 1] [--engine-keys N] [--no-verify]

The events are generated as backtest_bench.py's dataset (prices around 100, 10,000 keys,
timestamps 1 ms apart), sorted by key. The kernel's time is `run()` alone (the caller's
columns are numpy already); the engine's is its `send_batch` calls, rows built beforehand.
--verify (the default) checks the kernel's rows equal the engine's exactly (over the keys the
engine ran: --engine-keys N runs it over the first N keys only, for sizes where the engine
takes minutes; its rate then is for those events: the engine pays per key run, so it varies
with events per key). `uptime` load is printed with every run."""

import argparse
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

from backtest_bench import PLAN  # noqa: E402


def events(n, keys):
    """(ts, starts, cols) sorted by (key, timestamp), as backtest_bench.py generates them."""
    rng = np.random.default_rng(15)
    key = rng.integers(0, keys, n)
    price = 100 * np.exp(rng.normal(0, 0.02, n))
    ts = 1_700_000_000_000 + np.arange(n, dtype=np.int64)
    order = np.argsort(key, kind="stable")
    key, price, ts = key[order], price[order], ts[order]
    names = np.array([f"K{k:05d}" for k in range(keys)], dtype=object)
    starts = np.searchsorted(key, np.arange(keys + 1)).astype(np.intp)
    cols = {"sym": names[key], "price": price, "qty": ((key % 7) + 1).astype(np.int32)}
    return ts, starts, cols


def load():
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def kernel_runs(kernel, ts, starts, cols, runs):
    out = []
    for _ in range(runs):
        t0 = time.process_time()
        res = kernel.run(ts, starts, cols, int(ts.max()))
        cpu = time.process_time() - t0
        assert res is not None, "the kernel declined the batch"
        out.append(
            {
                "cpu_s": round(cpu, 3),
                "events_per_cpu_s": round(len(ts) / cpu),
                "out": len(res[0]),
                "uptime": load(),
            }
        )
        print(json.dumps({"kernel": kernel.output_stream, **out[-1]}), file=sys.stderr)
    return out, res


def engine_run(plan, stream, out_stream, ts, starts, cols):
    """The row engine fed key by key; -> (cpu seconds, [(key, ts, row)])."""
    import cep
    from cep.backtest.rewrite import split_partitions

    rt = cep.ExecutionPlanRuntime(split_partitions(plan), playback=True)
    got, key = [], [0]
    rt.add_callback(out_stream, lambda evs: got.extend((key[0], t, tuple(r)) for t, r in evs))
    d = rt.junctions[stream].definition
    rows = list(zip(ts.tolist(), zip(*[cols[a.name].tolist() for a in d.attributes])))
    handler, end, bounds = rt.input_handler(stream), int(ts.max()), starts.tolist()
    gc.collect()
    gc.freeze()  # the prebuilt rows: a task converts batch by batch, its GC never sees them
    t0 = time.process_time()
    for k in range(len(bounds) - 1):
        key[0] = k
        if k:
            rt.advance_time(end)
            rt.scheduler.restore_clock(None)
        handler.send_batch(rows[bounds[k] : bounds[k + 1]])
    rt.advance_time(end)
    cpu = time.process_time() - t0
    rt.shutdown()
    gc.unfreeze()
    return cpu, got


def one_query(plan, index, ts, starts, cols, args):
    from cep.engine.columnar.keyed.lookup import kernel_for, plan_query

    kernel = kernel_for(plan, index)
    name = plan_query(plan, index)[0].output.target
    runs, res = kernel_runs(kernel, ts, starts, cols, args.runs)
    k_rate = statistics.median(r["events_per_cpu_s"] for r in runs)
    single = _only(plan, index)
    e_runs = []
    nk = min(args.engine_keys or len(starts) - 1, len(starts) - 1)
    ets, estarts = ts[: starts[nk]], starts[: nk + 1]
    ecols = {k: v[: starts[nk]] for k, v in cols.items()}
    for _ in range(args.engine_runs):
        cpu, got = engine_run(single, "Trades", name, ets, estarts, ecols)
        e_runs.append(
            {
                "cpu_s": round(cpu, 2),
                "events": len(ets),
                "events_per_cpu_s": round(len(ets) / cpu),
                "out": len(got),
                "uptime": load(),
            }
        )
        print(json.dumps({"engine": name, **e_runs[-1]}), file=sys.stderr)
    e_rate = statistics.median(r["events_per_cpu_s"] for r in e_runs)
    result = {
        "kernel_median_events_per_cpu_s": k_rate,
        "kernel_runs": runs,
        "engine_median_events_per_cpu_s": e_rate,
        "engine_runs": e_runs,
        "ratio": round(k_rate / e_rate, 1),
    }
    if args.verify:
        n_out = int(np.searchsorted(res[2], nk))  # the kernel's rows of those keys
        mine = (res[0][:n_out], {k: v[:n_out] for k, v in res[1].items()}, res[2][:n_out])
        result["equal_to_engine"] = same(mine, got, kernel.output_attributes)
    return name, result


def same(res, got, attrs):
    """The kernel's columns equal the engine's rows exactly (floats by their bits, every
    NaN one NaN), compared column by column with numpy."""
    out_ts, out, key = res
    if len(got) != len(out_ts):
        return False
    cols = list(zip(*got)) if got else [(), (), ()]
    if not (
        np.array_equal(np.array(cols[0]), key)
        and np.array_equal(np.array(cols[1], np.int64), out_ts)
    ):
        return False
    rows = list(zip(*cols[2])) if got else [()] * len(attrs)
    for (name, _), want in zip(attrs, rows):
        mine = out[name]
        if mine.dtype.kind == "f":
            a, b = mine.astype(np.float64), np.array(want, np.float64)
            nan = np.isnan(a)
            if not (
                np.array_equal(nan, np.isnan(b))
                and np.array_equal(a[~nan].view(np.int64), b[~nan].view(np.int64))
            ):
                return False
        elif mine.tolist() != list(want):
            return False
    return True


def _only(plan, index):
    """The plan with the partition holding only its index-th query."""
    import dataclasses

    part = plan.elements[0]
    return dataclasses.replace(
        plan, elements=(dataclasses.replace(part, queries=(part.queries[index],)),)
    )


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--events", type=int, default=1_000_000)
    p.add_argument("--keys", type=int, default=10_000)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--engine-runs", type=int, default=1)
    p.add_argument(
        "--engine-keys",
        type=int,
        default=0,
        help="run the engine over the first N keys' events only (0: all keys); "
        "its figure is per its own events",
    )
    p.add_argument("--no-verify", dest="verify", action="store_false")
    args = p.parse_args(argv)
    import cep

    plan = cep.compile(PLAN)
    ts, starts, cols = events(args.events, args.keys)
    result = {
        "events": args.events,
        "keys": args.keys,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "uptime_before": load(),
        "queries": {},
    }
    for index in (0, 1):
        name, r = one_query(plan, index, ts, starts, cols, args)
        result["queries"][name] = r
    result["uptime_after"] = load()
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
