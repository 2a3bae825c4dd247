"""Benchmark the row engine's partition fed key by key, each key's run on its own playback
clock (as `cep backtest` feeds a keyed plan: advance to the end, `restore_clock(None)`, the
next key): CPU seconds of the `send_batch` / `advance_time` calls, per-event rate, and the
CPU of each tenth of the keys (flat when the per-event cost does not grow with the keys fed),
medians of --runs, with the waiting partials (pattern) or pending timers (window) at the end.

    .venv/bin/python benchmarks/partition_restart_bench.py [--events 1000000] [--keys 10000]
        [--runs 3] [--plan pattern|window]

The events are keyed_kernel_bench.py's (backtest_bench.py's dataset: prices around 100,
timestamps 1 ms apart, sorted by key). `uptime` load is printed with every run."""

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

import cep  # noqa: E402
from keyed_kernel_bench import events  # noqa: E402

HEAD = (
    "@Plan:name('RestartBench')\ndefine stream Trades (sym string, price double, qty int);\n"
    "define stream Out (sym string, a double, b double);\n"
)
PLANS = {
    "pattern": "partition with (sym of Trades) begin from every e1=Trades -> "
    "e2=Trades[price > e1.price * 1.05] within 10 sec select e1.sym as sym, "
    "e1.price as a, e2.price as b insert into Out; end;",
    "window": "partition with (sym of Trades) begin from Trades#window.time(10 sec) "
    "select sym, avg(price) as a, sum(price) as b insert into Out; end;",
}


def load():
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def one_run(plan, ts, starts, cols):
    rt = cep.ExecutionPlanRuntime(cep.parse(HEAD + PLANS[plan]), playback=True)
    out = [0]
    rt.add_callback("Out", lambda evs: out.__setitem__(0, out[0] + len(evs)))
    rows = list(
        zip(ts.tolist(), zip(cols["sym"].tolist(), cols["price"].tolist(), cols["qty"].tolist()))
    )
    handler, end, bounds = rt.input_handler("Trades"), int(ts.max()), starts.tolist()
    tenth = max(1, (len(bounds) - 1) // 10)
    gc.collect()
    gc.freeze()  # the prebuilt rows: a task converts batch by batch, its GC never sees them
    laps, t0 = [], time.process_time()
    lap = t0
    for k in range(len(bounds) - 1):
        if k:
            rt.advance_time(end)
            rt.scheduler.restore_clock(None)
        handler.send_batch(rows[bounds[k] : bounds[k + 1]])
        if (k + 1) % tenth == 0:
            now = time.process_time()
            laps.append(round(now - lap, 3))
            lap = now
    rt.advance_time(end)
    cpu = time.process_time() - t0
    state = {"pending_timers": rt.scheduler.pending()}
    kernels = [
        p.fast.merged[0]
        for k, p in rt.ctx.stateful.items()
        if k.startswith("partition") and getattr(p, "fast", None) is not None and p.fast.merged
    ]
    if kernels:
        state["waiting_partials"] = kernels[0].pending_count()
    rt.shutdown()
    gc.unfreeze()
    return {
        "cpu_s": round(cpu, 3),
        "events_per_cpu_s": round(len(ts) / cpu),
        "out": out[0],
        "tenths_cpu_s": laps,
        **state,
        "uptime": load(),
    }


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--events", type=int, default=1_000_000)
    p.add_argument("--keys", type=int, default=10_000)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--plan", choices=sorted(PLANS), default="pattern")
    args = p.parse_args(argv)
    ts, starts, cols = events(args.events, args.keys)
    runs = []
    for _ in range(args.runs):
        runs.append(one_run(args.plan, ts, starts, cols))
        print(json.dumps(runs[-1]), file=sys.stderr)
    cpu = statistics.median(r["cpu_s"] for r in runs)
    print(
        json.dumps(
            {
                "plan": args.plan,
                "events": args.events,
                "keys": args.keys,
                "median_cpu_s": cpu,
                "median_events_per_cpu_s": round(args.events / cpu),
                "out": runs[-1]["out"],
            }
        )
    )


if __name__ == "__main__":
    main()
