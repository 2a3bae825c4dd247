"""Benchmarks of the multi-stream engine: patterns, partitions, joins, tables, memory.

In-process, batches of 1,000 events. Each workload runs through the whole runtime
(`InputHandler.send_batch`: input checking, junctions, processors, selector, output callback)
and, where it tells something, through the query's processor alone (no input checking), so
the engine's own cost is visible. Prints the median of several runs (after a warm-up run) and
the machine; `--rss` prints the RSS curve over `--rss-events` events. Rates are events per
second of wall time and, because other jobs share this 2-core machine, also per second of
this process's CPU time (the less noisy figure when the load average is high).

    .venv/bin/python benchmarks/multi_bench.py [--runs 5] [--only pattern,join] [--rss]
(`--rss` alone runs only the memory curve.)
"""

import argparse
import gc
import os
import platform
import random
import statistics
import sys
import time

import psutil

from cep.compiler import compile as compile_plan
from cep.engine.runtime import ExecutionPlanRuntime

BATCH = 1000
PATTERN = (
    "from every e1=S -> e2=S[e2.sym == e1.sym and e2.price > e1.price * 1.05] "
    "within 10 sec select e1.sym as sym, e1.price as p1, e2.price as p2 insert into Out;"
)
STREAM_S = "@Plan:playback\ndefine stream S (sym string, price double);\n"


def clock():
    return time.perf_counter(), time.process_time()


def elapsed(t0):
    """(wall seconds, CPU seconds) since t0."""
    return time.perf_counter() - t0[0], time.process_time() - t0[1]


def ticks(n, keys, seed=1):
    """n events (ts, (sym, price)), 1 ms apart, uniform over `keys` symbols."""
    rnd = random.Random(seed)
    syms = [f"K{i}" for i in range(keys)]
    return [
        (1_000_000 + i, (syms[rnd.randrange(keys)], 100.0 + rnd.random() * 100.0)) for i in range(n)
    ]


def walk(n, keys, seed=2):
    """n events 1 ms apart: each symbol's price is a random walk (+-0.5% a step), so 5% rises
    within 10 s are rare and many partial matches wait: the realistic case."""
    rnd = random.Random(seed)
    syms = [f"K{i}" for i in range(keys)]
    px = [100.0] * keys
    out = []
    for i in range(n):
        k = rnd.randrange(keys)
        px[k] *= 1 + (rnd.random() - 0.5) * 0.01
        out.append((1_000_000 + i, (syms[k], px[k])))
    return out


def batches(events):
    return [events[i : i + BATCH] for i in range(0, len(events), BATCH)]


def through_runtime(text, feeds):
    """Seconds to push `feeds` [(stream, batches)] through a fresh runtime; output count."""
    rt = ExecutionPlanRuntime(compile_plan(text))
    count = [0]
    rt.add_callback("Out", lambda b: count.__setitem__(0, count[0] + len(b)))
    handlers = {sid: rt.input_handler(sid) for sid, _ in feeds}
    gc.collect()
    t0 = clock()
    for sid, bs in feeds:
        h = handlers[sid]
        for b in bs:
            h.send_batch(b)
    return elapsed(t0), count[0]


def w_pattern(n):
    evs = batches(ticks(n, 100))
    return n, lambda: through_runtime(STREAM_S + PATTERN, [("S", evs)])


def w_pattern_walk(n):
    """The pattern over random-walk prices (about 100 partials waiting per symbol)."""
    evs = batches(walk(n, 100))
    return n, lambda: through_runtime(STREAM_S + PATTERN, [("S", evs)])


def w_pattern_processor(n):
    """The same pattern, fed to its PatternProcessor directly (rows already checked)."""
    evs = [[(ts, r, 0) for ts, r in b] for b in batches(ticks(n, 100))]

    def run():
        rt = ExecutionPlanRuntime(compile_plan(STREAM_S + PATTERN))
        count = [0]
        rt.add_callback("Out", lambda b: count.__setitem__(0, count[0] + len(b)))
        receiver = rt.junctions["S"].subscribers[0]
        gc.collect()
        t0 = clock()
        for b in evs:
            receiver.process(b)
        return elapsed(t0), count[0]

    return n, run


def w_partition(n):
    evs = batches(ticks(n, 100_000))
    text = STREAM_S + f"partition with (sym of S) begin {PATTERN} end;"
    return n, lambda: through_runtime(text, [("S", evs)])


def w_join(n):
    """length(1000) x length(1000) join on a key with 1,000 values (about one match per
    arrival once the windows are full), the two streams alternating in batches."""
    rnd = random.Random(3)
    a = batches([(1_000_000 + i, (rnd.randrange(1000), float(i))) for i in range(n // 2)])
    b = batches([(1_000_000 + i, (rnd.randrange(1000), float(i))) for i in range(n // 2)])
    text = (
        "@Plan:playback\ndefine stream A (k int, x double);\n"
        "define stream B (k int, y double);\n"
        "from A#window.length(1000) join B#window.length(1000) on A.k == B.k "
        "select A.k as k, A.x as x, B.y as y insert into Out;"
    )

    def run():
        rt = ExecutionPlanRuntime(compile_plan(text))
        count = [0]
        rt.add_callback("Out", lambda o: count.__setitem__(0, count[0] + len(o)))
        ha, hb = rt.input_handler("A"), rt.input_handler("B")
        gc.collect()
        t0 = clock()
        for x, y in zip(a, b):
            ha.send_batch(x)
            hb.send_batch(y)
        return elapsed(t0), count[0]

    return n, run


TABLE_PLAN = (
    "@Plan:playback\ndefine stream Put (k int, v double);\n"
    "define stream Ask (k int);\n"
    "@IndexBy('k') define table T (k int, v double);\n"
    "from Put insert into T;\n"
    "from Ask join T on Ask.k == T.k select Ask.k as k, T.v as v insert into Out;"
)


def _table_runtime(keys):
    rt = ExecutionPlanRuntime(compile_plan(TABLE_PLAN))
    count = [0]
    rt.add_callback("Out", lambda o: count.__setitem__(0, count[0] + len(o)))
    put = rt.input_handler("Put")
    for b in batches([(1, (k, k * 0.5)) for k in range(keys)]):
        put.send_batch(b)
    return rt, count


def w_table(n):
    """Stream-table join on an @IndexBy key: 100,000 rows, every lookup a hit."""
    rnd = random.Random(5)
    asks = batches([(2 + i, (rnd.randrange(100_000),)) for i in range(n)])

    def run():
        rt, count = _table_runtime(100_000)
        h = rt.input_handler("Ask")
        gc.collect()
        t0 = clock()
        for b in asks:
            h.send_batch(b)
        return elapsed(t0), count[0]

    return n, run


def w_table_processor(n):
    """The same lookups fed to the join's stream-side receiver (rows already checked)."""
    rnd = random.Random(5)
    asks = batches([(2 + i, (rnd.randrange(100_000),), 0) for i in range(n)])

    def run():
        rt, count = _table_runtime(100_000)
        receiver = rt.junctions["Ask"].subscribers[0]
        gc.collect()
        t0 = clock()
        for b in asks:
            receiver.process(b)
        return elapsed(t0), count[0]

    return n, run


WORKLOADS = {
    "pattern": (w_pattern, 300_000, 300_000),
    "pattern-walk": (w_pattern_walk, 300_000, 300_000),
    "pattern-processor": (w_pattern_processor, 300_000, 300_000),
    "partition": (w_partition, 300_000, 200_000),
    "join": (w_join, 300_000, 300_000),
    "table": (w_table, 500_000, 1_000_000),
    "table-processor": (w_table_processor, 500_000, 1_000_000),
}


def bench(name, runs):
    make, n, target = WORKLOADS[name]
    n, run = make(n)
    run()  # warm-up
    walls, cpus, outs = [], [], None
    for _ in range(runs):
        (wall, cpu), outs = run()
        walls.append(n / wall)
        cpus.append(n / cpu)
    med, med_cpu = statistics.median(walls), statistics.median(cpus)
    flag = "ok " if max(med, med_cpu) >= target else "LOW"
    print(
        f"{flag} {name:18s} median {med:>10,.0f} ev/s wall, {med_cpu:>10,.0f} ev/s CPU "
        f"(target {target:,}; runs {', '.join(f'{r:,.0f}' for r in walls)}; "
        f"{outs:,} outputs per run)",
        flush=True,
    )


def rss_curve(total, step):
    """Partitioned pattern + sequence with `within` and @purge over ever-new keys (each key
    is active for 20 events, then idle): RSS must level off, not grow with the key count."""
    text = (
        STREAM_S + "@purge(enable='true', interval='1 sec', idle.period='2 sec')\n"
        "partition with (sym of S) begin\n"
        + PATTERN
        + "\nfrom every e1=S, e2=S[price > e1.price] select e1.sym as sym insert into Out2;\n"
        "end;"
    )
    rt = ExecutionPlanRuntime(compile_plan(text))
    rt.add_callback("Out", lambda b: None)
    h = rt.input_handler("S")
    proc = psutil.Process()
    rnd = random.Random(9)
    part = next(p for k, p in rt.ctx.stateful.items() if k.startswith("partition"))
    print(
        f"{'events':>12} {'RSS MiB':>9} {'live keys':>10} {'ev/s wall':>10} "
        f"{'ev/s CPU':>10}  (rates of the last step)",
        flush=True,
    )
    done = 0
    while done < total:
        t0 = clock()
        for _ in range(step // BATCH):
            h.send_batch(
                [
                    (1_000_000 + i, (f"K{i // 20}", 100.0 + rnd.random() * 100.0))
                    for i in range(done, done + BATCH)
                ]
            )
            done += BATCH
        wall, cpu = elapsed(t0)
        print(
            f"{done:>12,} {proc.memory_info().rss / 2**20:>9.1f} "
            f"{len(part.last_seen):>10,} {step / wall:>10,.0f} {step / cpu:>10,.0f}",
            flush=True,
        )


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--only", default="", help="comma-separated workload names")
    ap.add_argument("--rss", action="store_true", help="print the RSS curve")
    ap.add_argument("--rss-events", type=int, default=10_000_000)
    args = ap.parse_args(argv)
    print(
        f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.node()}, "
        f"{os.cpu_count()} cores, Python {platform.python_version()}, "
        f"load {os.getloadavg()[0]:.1f}",
        flush=True,
    )
    names = [x for x in args.only.split(",") if x] or ([] if args.rss else list(WORKLOADS))
    unknown = [x for x in names if x not in WORKLOADS]
    if unknown:
        ap.error(f"unknown workload(s) {', '.join(unknown)}; known: {', '.join(WORKLOADS)}")
    for name in names:
        bench(name, args.runs)
    if args.rss:
        rss_curve(args.rss_events, max(BATCH, args.rss_events // 20))
    return 0


if __name__ == "__main__":
    sys.exit(main())
