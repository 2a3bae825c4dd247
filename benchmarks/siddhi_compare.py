"""Our engine against Siddhi 3.2 (Java) on 8 reference workloads.

Every workload goes through the public, checked path: `rt.input_handler(S).send_batch(batch)`
with batches of 1,000 events and input checking on. The same events are sent in every run
(generated once, seeded); each run builds a fresh runtime, warms it up on other events, then
times the sends. The generated events are moved out of the garbage collector's scans
(`gc.freeze()`, as the CEP worker's task processes do after setup): otherwise every full
collection rescans the harness's million pre-built tuples, the harness's cost and not the
engine's (`--no-freeze` shows it).

With --columnar, each workload also runs through the public columnar path: the same events
as numpy columns (`send_columns({"sym": object array, "price": float64, "vol": int64},
timestamps)`, checked per column) and a columnar callback (`add_callback(..., columnar=True)`);
queries without a columnar kernel get the events as rows inside the engine.

Prints the median of --runs runs in events per wall-clock second and per CPU second of this
process (the figure to trust when other jobs load the machine: compare the load average with
the 2 cores), the pre-validated path (`send_batch(..., validated=True)`) beside them, the load
average before and after, and the ratio to the Siddhi 3.2 reference figures measured
side by side on this machine (Siddhi's Java cannot run here: no Maven).

    .venv/bin/python benchmarks/siddhi_compare.py [--runs 5] [--only filter,join] [--no-validated]
        [--columnar]
"""
import argparse
import gc
import os
import platform
import random
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import cep  # noqa: E402

BATCH = 1000
HEAD = "@Plan:playback\ndefine stream S (sym string, price double, vol long);\n"
PATTERN = ("from every e1=S -> e2=S[e2.sym == e1.sym and e2.price > e1.price * 1.05] "
           "within 10 sec select e1.sym as sym, e1.price as p1, e2.price as p2 insert into Out;")
JOIN_HEAD = ("@Plan:playback\ndefine stream A (sym string, x double);\n"
             "define stream B (sym string, y double);\n")
JOIN = ("from A#window.length(1000) join B#window.length(1000) on A.sym == B.sym "
        "select A.sym as sym, A.x as x, B.y as y insert into Out;")


class Workload:
    """A plan, the events to time ([(stream, batch)], in order), warm-up events, the
    reference Siddhi 3.2 figure (low, high) in events/s and our goal as a multiple of it."""

    def __init__(self, name, plan, feed, warm, siddhi, goal, floor=0):
        self.name, self.plan, self.feed, self.warm = name, plan, feed, warm
        self.siddhi, self.goal, self.floor = siddhi, goal, floor

    @property
    def events(self):
        return sum(len(b) for _, b in self.feed)

    def target(self):
        return max(self.siddhi[1] * self.goal, self.floor)


_SYMS = {}


def symbols(n):
    syms = _SYMS.get(n)
    if syms is None:  # the same str objects every batch, as a decoder's interned keys
        syms = _SYMS[n] = [sys.intern(f"S{i}") for i in range(n)]
    return syms


def stock(n, keys, seed, start=1_000_000, lo=0.0, span=1000.0):
    """n events (ts, (sym, price, vol)) 1 ms apart, uniform over `keys` symbols."""
    rnd = random.Random(seed)
    syms = symbols(keys)
    return [(start + i, (syms[rnd.randrange(keys)], lo + rnd.random() * span,
                         rnd.randint(1, 1000))) for i in range(n)]


def pairs(n, keys, seed, start=1_000_000):
    """n events (ts, (sym, value)) for the join's two streams."""
    rnd = random.Random(seed)
    syms = symbols(keys)
    return [(start + i, (syms[rnd.randrange(keys)], float(i))) for i in range(n)]


def chunks(events, stream="S"):
    return [(stream, events[i:i + BATCH]) for i in range(0, len(events), BATCH)]


def join_feed(n, keys, seed, start):
    a = chunks(pairs(n // 2, keys, seed, start), "A")
    b = chunks(pairs(n // 2, keys, seed + 1, start), "B")
    return [x for ab in zip(a, b) for x in ab]


def workloads(scale):
    """The 8 reference workloads; `scale` shrinks the event counts (tests, smoke)."""
    n = max(BATCH, int(200_000 * scale))
    big = max(BATCH, int(1_000_000 * scale))
    tail = 2_000_000  # the timed events start after the warm-up's timestamps
    pat = dict(lo=100.0, span=100.0)
    agg = "from S#window.{w} select {s} insert into Out;"
    return [
        Workload("filter + projection", HEAD + "from S[price > 500.0] select sym, price "
                 "insert into Out;", chunks(stock(n, 100, 1, tail)),
                 chunks(stock(5000, 100, 2)), (1.55e6, 1.92e6), 5),
        Workload("time(1 min) avg/sum/count group by", HEAD + agg.format(
            w="time(1 min)", s="sym, avg(price) as ap, sum(price) as sp, count() as c "
            "group by sym"), chunks(stock(n, 100, 1, tail)), chunks(stock(70_000, 100, 2)),
            (0.44e6, 0.50e6), 5),
        Workload("length(10000) sum", HEAD + agg.format(w="length(10000)",
                                                         s="sum(price) as s"),
                 chunks(stock(n, 100, 1, tail)), chunks(stock(20_000, 100, 2)),
                 (1.48e6, 1.52e6), 5),
        Workload("length(10) sum", HEAD + agg.format(w="length(10)", s="sum(price) as s"),
                 chunks(stock(n, 100, 1, tail)), chunks(stock(5000, 100, 2)),
                 (1.51e6, 1.51e6), 5),
        Workload("partitioned pattern, 100 keys", HEAD + f"partition with (sym of S) begin "
                 f"{PATTERN} end;", chunks(stock(big, 100, 1, tail, **pat)),
                 chunks(stock(20_000, 100, 2, **pat)), (0.25e6, 0.50e6), 2, floor=1e6),
        Workload("group by sum, 10 groups", HEAD + "from S select sym, sum(price) as s "
                 "group by sym insert into Out;", chunks(stock(n, 10, 1, tail)),
                 chunks(stock(5000, 10, 2)), (1.24e6, 1.24e6), 2),
        Workload("pattern (no partition)", HEAD + PATTERN,
                 chunks(stock(n, 100, 1, tail, **pat)), chunks(stock(20_000, 100, 2, **pat)),
                 (6.4e3, 6.4e3), 2),
        Workload("join length(1000) x length(1000)", JOIN_HEAD + JOIN,
                 join_feed(n // 4, 100, 1, tail), join_feed(4000, 100, 3, 1_000_000),
                 (20e3, 20e3), 2),
    ]


def run_once(w, validated):
    """(events/s wall, events/s CPU, outputs) of one fresh runtime over w's events."""
    rt = cep.ExecutionPlanRuntime(cep.compile(w.plan))
    count = [0]
    rt.add_callback("Out", lambda evs: count.__setitem__(0, count[0] + len(evs)))
    handlers = {sid: rt.input_handler(sid) for sid, _ in w.feed + w.warm}
    for sid, b in w.warm:
        handlers[sid].send_batch(b)
    count[0] = 0
    sends = [(handlers[sid].send_batch, b) for sid, b in w.feed]
    gc.collect()
    t0, c0 = time.perf_counter(), time.process_time()
    if validated:
        for send, b in sends:
            send(b, validated=True)
    else:
        for send, b in sends:
            bad = send(b)
            if bad:
                raise SystemExit(f"{w.name}: {len(bad)} events rejected: {bad[0]}")
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    rt.shutdown()
    return w.events / wall, w.events / max(cpu, 1e-9), count[0]


def as_columns(batch):
    """A batch of (ts, row) events as send_columns' arguments (names of S or of A/B)."""
    import numpy as np
    ts = np.fromiter((t for t, _ in batch), np.int64, len(batch))
    cols = list(zip(*[r for _, r in batch]))
    names = ("sym", "price", "vol") if len(cols) == 3 else ("sym", "x")
    types = (object, np.float64, np.int64)
    data = {}
    for n, c, t in zip(names, cols, types):
        if t is object:
            a = np.empty(len(c), object)
            a[:] = c
        else:
            a = np.array(c, t)
        data[n] = a
    return data, ts


def run_columnar(w):
    """(events/s wall, events/s CPU, outputs) through send_columns and a columnar callback."""
    rt = cep.ExecutionPlanRuntime(cep.compile(w.plan))
    count = [0]
    rt.add_callback("Out", lambda c: count.__setitem__(0, count[0] + len(c)), columnar=True)
    handlers = {sid: rt.input_handler(sid) for sid, _ in w.feed + w.warm}
    for sid, b in w.warm:
        handlers[sid].send_columns(*_fix(sid, as_columns(b)))
    count[0] = 0
    sends = [(handlers[sid].send_columns, _fix(sid, as_columns(b))) for sid, b in w.feed]
    gc.collect()
    t0, c0 = time.perf_counter(), time.process_time()
    for send, (data, ts) in sends:
        bad = send(data, ts)
        if bad:
            raise SystemExit(f"{w.name}: {len(bad)} events rejected: {bad[0]}")
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    rt.shutdown()
    return w.events / wall, w.events / max(cpu, 1e-9), count[0]


def _fix(sid, data_ts):
    data, ts = data_ts
    if sid == "B":
        data = {"sym": data["sym"], "y": data.pop("x")}
    return data, ts


def measure(w, runs, validated, columnar=False):
    one = (lambda: run_columnar(w)) if columnar else (lambda: run_once(w, validated))
    one()  # warm-up run (code paths, allocator)
    results = [one() for _ in range(runs)]
    return (statistics.median(r[0] for r in results),
            statistics.median(r[1] for r in results), results[0][2],
            [r[0] for r in results])


def fmt(rate):
    if not rate:
        return ""
    return f"{rate / 1e6:.2f}M" if rate >= 1e6 else f"{rate / 1e3:.0f}K"


def siddhi_text(lo_hi):
    lo, hi = lo_hi
    return fmt(lo) if lo == hi else f"{fmt(lo)}-{fmt(hi)}"


def ratio(rate, w):
    """ours / Siddhi against the reference range (high figure first: the lower ratio)."""
    lo, hi = rate / w.siddhi[1], rate / w.siddhi[0]
    return f"{lo:.1f}" if w.siddhi[0] == w.siddhi[1] else f"{lo:.1f}-{hi:.1f}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--only", default="", help="comma-separated parts of workload names")
    ap.add_argument("--scale", type=float, default=1.0, help="event counts times this")
    ap.add_argument("--no-validated", action="store_true",
                    help="skip the pre-validated figures")
    ap.add_argument("--columnar", action="store_true",
                    help="also time the public columnar path (send_columns)")
    ap.add_argument("--no-freeze", action="store_true",
                    help="leave the generated events to the garbage collector's scans")
    args = ap.parse_args(argv)
    wanted = [x for x in args.only.split(",") if x]
    chosen = [w for w in workloads(args.scale)
              if not wanted or any(x in w.name for x in wanted)]
    if not args.no_freeze:  # the harness's own events (up to 1M) are not the engine's state
        gc.collect()
        gc.freeze()
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.node()}, "
          f"{os.cpu_count()} cores, Python {platform.python_version()}, medians of "
          f"{args.runs} runs, batches of {BATCH}; load average "
          f"{'/'.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    print("| workload | Siddhi 3.2 | ours, checked: wall (runs) | CPU | ours / Siddhi: wall "
          "| CPU | goal | pre-validated: wall | CPU | columnar: wall | CPU | columnar / Siddhi "
          "(CPU) | events | outputs |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|", flush=True)
    for w in chosen:
        wall, cpu, outs, all_runs = measure(w, args.runs, False)
        pre = ("", "") if args.no_validated else measure(w, args.runs, True)[:2]
        col = ("", "", "") if not args.columnar else measure(w, args.runs, False, True)
        if args.columnar and col[2] != outs:
            raise SystemExit(f"{w.name}: columnar gave {col[2]} outputs, rows {outs}")
        ok = "ok" if max(wall, cpu) >= w.target() else "LOW"
        if args.columnar:
            ok = f"rows {ok}, columnar {'ok' if max(col[:2]) >= w.target() else 'LOW'}"
        print(f"| {w.name} | {siddhi_text(w.siddhi)} | {fmt(wall)} "
              f"({'/'.join(fmt(r) for r in all_runs)}) | {fmt(cpu)} | {ratio(wall, w)} "
              f"| {ratio(cpu, w)} | {ok} >= {fmt(w.target())} "
              f"| {' | '.join(fmt(x) if x else '' for x in pre)} "
              f"| {fmt(col[0])} | {fmt(col[1])} | {ratio(col[1], w) if col[1] else ''} "
              f"| {w.events:,} "
              f"| {outs:,} |", flush=True)
    print(f"# load average after: {'/'.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
