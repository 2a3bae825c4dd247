"""Engine throughput, in-process, against the engine's throughput goals.

Batches of 1,000 events of S(sym string, price double, vol long), 100 symbols; each workload
is warmed up, then timed over several runs; medians are reported in events per second of this
process's CPU time (robust when other jobs share the machine) and of wall-clock time.

    .venv/bin/python benchmarks/engine_bench.py [--runs 5] [--events 200000] [--only NAME]
"""

import argparse
import os
import platform
import random
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import cep  # noqa: E402

HEAD = "@Plan:playback\ndefine stream S (sym string, price double, vol long);\n"
WORKLOADS = {
    "filter+projection": "from S[price > 500.0] select sym, price insert into Out;",
    "time(1 min) avg/sum/count group by sym": "from S#window.time(1 min) select sym, avg(price) as ap, sum(price) as sp, "
    "count() as c group by sym insert into Out;",
    "length(10000) sum": "from S#window.length(10000) select sum(price) as s insert into Out;",
    "length(10) sum": "from S#window.length(10) select sum(price) as s insert into Out;",
    "length(100000) sum": "from S#window.length(100000) select sum(price) as s insert into Out;",
    "length(10000) min/max": "from S#window.length(10000) select min(price) as lo, "
    "max(price) as hi insert into Out;",
    "group by sym sum, 10 groups": "from S select sym, sum(price) as s group by sym "
    "insert into Out;",
    "group by sym sum, 100000 groups": "from S select sym, sum(price) as s group by sym "
    "insert into Out;",
    # the workload of benchmarks/siddhi_compare.py (prices 100-200, so most partials complete)
    "partitioned pattern, 100 keys": "partition with (sym of S) begin from every e1=S -> "
    "e2=S[e2.sym == e1.sym and e2.price > e1.price * 1.05] within 10 sec select e1.sym "
    "as sym, e1.price as p1, e2.price as p2 insert into Out; end;",
}
PRICES = {"partitioned pattern, 100 keys": (100.0, 100.0)}  # (lowest, span); else 0-1000
GROUPS = {"group by sym sum, 10 groups": 10, "group by sym sum, 100000 groups": 100000}
WARMUP = {
    "time(1 min) avg/sum/count group by sym": 70000,
    "length(100000) sum": 110000,
    "group by sym sum, 10 groups": 30000,
    "group by sym sum, 100000 groups": 300000,
    "partitioned pattern, 100 keys": 20000,
}


_SYMBOLS = {}


def make_batches(n, symbols, batch=1000, seed=1, start_ts=0, prices=(0.0, 1000.0)):
    rnd = random.Random(seed)
    lo, span = prices
    syms = _SYMBOLS.get(symbols)
    if syms is None:  # the same str objects every batch, as a decoder's interned keys
        syms = _SYMBOLS[symbols] = [sys.intern(f"S{i}") for i in range(symbols)]
    events = [
        (start_ts + i, (rnd.choice(syms), lo + rnd.random() * span, rnd.randint(1, 1000)))
        for i in range(n)
    ]
    return [events[i : i + batch] for i in range(0, n, batch)]


def run_workload(query, n, symbols, warmup, validated=False, prices=(0.0, 1000.0)):
    """Events/s of `query` over n events. Each batch is made just before it is sent, as a
    receiver hands over a freshly decoded frame; only the sends are timed."""
    rt = cep.ExecutionPlanRuntime(cep.compile(HEAD + query))
    count = [0]
    rt.add_callback("Out", lambda evs: count.__setitem__(0, count[0] + len(evs)))
    h = rt.input_handler("S")
    for b in make_batches(warmup, symbols, seed=2, prices=prices):
        h.send_batch(b)
    elapsed, cpu, chunk = 0.0, 0.0, 1000
    for start in range(0, n, chunk):
        batches = make_batches(
            min(chunk, n - start), symbols, seed=start, start_ts=warmup + start, prices=prices
        )
        t0, c0 = time.perf_counter(), time.process_time()
        for b in batches:
            h.send_batch(b, validated=validated)
        elapsed += time.perf_counter() - t0
        cpu += time.process_time() - c0
    rt.shutdown()
    return n / cpu, n / elapsed, count[0]


def run_single_sends(n):
    rt = cep.ExecutionPlanRuntime(cep.compile(HEAD + WORKLOADS["filter+projection"]))
    rt.add_callback("Out", lambda evs: None)
    send = rt.input_handler("S").send
    events = [e for b in make_batches(n, 100) for e in b]
    t0, c0 = time.perf_counter(), time.process_time()
    for ts, row in events:
        send(row, ts)
    return n / (time.process_time() - c0), n / (time.perf_counter() - t0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--events", type=int, default=200000)
    ap.add_argument("--only", default=None)
    args = ap.parse_args()
    print(
        f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} cores, Python {platform.python_version()}; medians of {args.runs} runs"
    )
    for name, query in WORKLOADS.items():
        if args.only and args.only not in name:
            continue
        for validated in (False, True):
            runs = [
                run_workload(
                    query,
                    args.events,
                    GROUPS.get(name, 100),
                    WARMUP.get(name, 5000),
                    validated,
                    PRICES.get(name, (0.0, 1000.0)),
                )
                for _ in range(args.runs)
            ]
            label = f"{name} ({'pre-validated' if validated else 'checked'})"
            report(label, [r[0] for r in runs], [r[1] for r in runs])
    if not args.only or "single" in args.only:
        runs = [run_single_sends(min(args.events, 50000)) for _ in range(args.runs)]
        report("single-event send(), filter+projection", [r[0] for r in runs], [r[1] for r in runs])


def report(label, cpu_rates, wall_rates):
    """Median events per CPU second of this process (robust on a shared machine) and per
    wall-clock second."""
    print(
        f"{label:58s} {statistics.median(cpu_rates) / 1e6:6.2f} M/s cpu "
        f"(min {min(cpu_rates) / 1e6:.2f}, max {max(cpu_rates) / 1e6:.2f})  "
        f"{statistics.median(wall_rates) / 1e6:6.2f} M/s wall",
        flush=True,
    )


if __name__ == "__main__":
    main()
