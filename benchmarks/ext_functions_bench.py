"""A `str:`/`math:` projection (Siddhi 3.2.15's standard extension functions) on our engine
against the live Siddhi kit, on the same events, in one run.

Siddhi: `../shared/siddhi-kit/siddhi-bench PLAN EVENTS --stream Out --batch 1000` (its batch
send mode: InputHandler.send(Event[]) of up to 1,000 events; it prints the median over
--runs of events per process-CPU second, after its own warm-up runs).
Ours, both through the public API on batches of 1,000 events:
- rows: `input_handler("S").send_batch(batch)` (checked input), a row callback;
- columnar: `send_columns({"sym": object array, "price": float64, "vol": int64}, ts)` and a
  columnar callback; the projection runs as numpy batch kernels (cep/catalog/ext/vector.py).
Each run builds a fresh runtime, warms it up on other events, then times the sends with
`time.process_time()` (CPU seconds of this process). Medians of --runs runs; the goal is ours
>= 2x Siddhi's events per CPU second. The load average is printed before and after (2 cores).

    .venv/bin/python benchmarks/ext_functions_bench.py [--events 500000] [--runs 5]
        [--kit ../shared/siddhi-kit]
"""

import argparse
import gc
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

import cep  # noqa: E402

BATCH = 1000
PLAN = """@Plan:playback
define stream S (sym string, price double, vol long);
from S select str:upper(sym) as u, str:length(sym) as n, str:concat(sym, '-', sym) as c,
    math:abs(price) as a, math:sqrt(vol) as r, math:floor(price) as f,
    math:max(price, 100.0) as m, math:round(price) as rp
insert into Out;
"""
SYMS = ["IBM", "WSO2", "ORCL", "MSFT", "GOOG", "AAPL", "AMZN", "INTC", "CSCO", "NVDA"]


def events(n, seed):
    r = random.Random(seed)
    return [
        (1000 + i, (r.choice(SYMS), round(r.uniform(-100.0, 1000.0), 3), r.randint(1, 100000)))
        for i in range(n)
    ]


def batches(evs):
    return [evs[i : i + BATCH] for i in range(0, len(evs), BATCH)]


def as_columns(batch):
    ts = np.fromiter((t for t, _ in batch), np.int64, len(batch))
    sym = np.empty(len(batch), object)
    sym[:] = [row[0] for _, row in batch]
    return {
        "sym": sym,
        "price": np.array([row[1] for _, row in batch], np.float64),
        "vol": np.array([row[2] for _, row in batch], np.int64),
    }, ts


def run_rows(feed, warm):
    rt = cep.ExecutionPlanRuntime(cep.compile(PLAN))
    count = [0]
    rt.add_callback("Out", lambda evs: count.__setitem__(0, count[0] + len(evs)))
    h = rt.input_handler("S")
    for b in warm:
        h.send_batch(b)
    count[0] = 0
    gc.collect()
    c0 = time.process_time()
    for b in feed:
        h.send_batch(b)
    cpu = time.process_time() - c0
    rt.shutdown()
    return cpu, count[0]


def run_columnar(feed, warm):
    rt = cep.ExecutionPlanRuntime(cep.compile(PLAN))
    count = [0]
    rt.add_callback("Out", lambda c: count.__setitem__(0, count[0] + len(c)), columnar=True)
    h = rt.input_handler("S")
    for b in warm:
        h.send_columns(*as_columns(b))
    count[0] = 0
    sends = [as_columns(b) for b in feed]
    gc.collect()
    c0 = time.process_time()
    for data, ts in sends:
        h.send_columns(data, ts)
    cpu = time.process_time() - c0
    rt.shutdown()
    return cpu, count[0]


def run_siddhi(kit, evs, runs, workdir):
    bench = os.path.join(kit, "siddhi-bench")
    if not os.path.exists(bench):
        return None
    plan, data = os.path.join(workdir, "plan.siddhiql"), os.path.join(workdir, "events.jsonl")
    with open(plan, "w") as f:
        f.write(PLAN)
    with open(data, "w") as f:
        for ts, row in evs:
            f.write(json.dumps({"stream": "S", "timestamp": ts, "data": list(row)}) + "\n")
    out = subprocess.run(
        [bench, plan, data, "--stream", "Out", "--runs", str(runs), "--batch", str(BATCH)],
        capture_output=True,
        text=True,
        check=True,
    )
    lines = [json.loads(x) for x in out.stdout.splitlines() if x.startswith("{")]
    summary = next(x for x in lines if x.get("summary"))
    return summary


def check_same_output(evs):
    """Our rows and columnar paths print the same first rows (so the columnar figure is a
    real run of the same projection)."""
    small = evs[:BATCH]
    got = {}
    for mode in ("rows", "columnar"):
        rt = cep.ExecutionPlanRuntime(cep.compile(PLAN))
        out = []
        rt.add_callback("Out", lambda e: out.extend(r for _, r in e))
        if mode == "rows":
            rt.input_handler("S").send_batch(small)
        else:
            rt.input_handler("S").send_columns(*as_columns(small))
        rt.shutdown()
        got[mode] = repr(out)
    if got["rows"] != got["columnar"]:
        raise SystemExit("the columnar path's output differs from the row path's")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=500000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument(
        "--kit",
        default=os.path.join(
            os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "shared", "siddhi-kit"
        ),
    )
    args = ap.parse_args(argv)
    kit = args.kit if os.path.exists(args.kit) else "/work/shared/siddhi-kit"
    evs = events(args.events, 7)
    warm = batches(events(20 * BATCH, 8))
    feed = batches(evs)
    check_same_output(evs)
    print(f"load average before: {os.getloadavg()}")
    print(f"plan: {' '.join(PLAN.split()[6:])}")
    print(f"{len(evs)} events, batches of {BATCH}, {args.runs} runs, medians")
    results = {}
    for name, fn in (
        ("ours rows (send_batch)", run_rows),
        ("ours columnar (send_columns)", run_columnar),
    ):
        fn(feed[:20], warm)  # warm-up run
        runs = [fn(feed, warm) for _ in range(args.runs)]
        outs = {n for _, n in runs}
        if outs != {len(evs)}:
            raise SystemExit(f"{name}: {outs} outputs, expected {len(evs)}")
        rate = len(evs) / statistics.median(c for c, _ in runs)
        results[name] = rate
        print(f"{name:32s} {rate / 1e3:9.0f}K events per CPU second")
    with tempfile.TemporaryDirectory() as tmp:
        summary = run_siddhi(kit, evs, args.runs, tmp)
    if summary is None:
        print(f"Siddhi kit not found at {kit}: no comparison")
        return 0
    siddhi = summary["median_events_per_cpu_s"]
    print(
        f"{'Siddhi 3.2.15 (--batch 1000)':32s} {siddhi / 1e3:9.0f}K events per CPU second "
        f"(median CPU {summary['median_cpu_s']:.3f} s, wall {summary['median_wall_s']:.3f} s, "
        f"Java {summary['java']})"
    )
    for name, rate in results.items():
        ratio = rate / siddhi
        print(f"{name}: {ratio:.2f}x Siddhi ({'meets' if ratio >= 2 else 'below'} the 2x goal)")
    print(f"load average after: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
