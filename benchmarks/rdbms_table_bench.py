"""Benchmark: a stream joined with a database table (`@from(eventtable='rdbms', cache=...)`)
on SQLite, against the same join on an in-memory `@IndexBy` table.

A table of `--keys` rows (symbol -> price, sector) is filled through the plan, then `--events`
events of Q(symbol, qty) join it on `Q.symbol == T.symbol and T.price > 10.0` (the whole
condition pushed down to SQL, the event's symbol a bound parameter), in batches of 1,000
through `InputHandler.send_batch` (input checks, junction, join, selector, output callback).
The cached table (LRU, cache.size >= keys) answers from its result cache after each key's
first read; the uncached one asks SQLite for every event. Prints the median of `--runs` runs
(after a warm-up run) in events per second of wall time and of this process's CPU time (the
steadier figure on a shared machine). The target for the cached join is >= 100,000 events/s.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/rdbms_table_bench.py [--runs 5] [--events 200000]
"""

import argparse
import os
import platform
import random
import statistics
import sys
import tempfile
import time

from cep.compiler import compile as compile_plan
from cep.engine.runtime import ExecutionPlanRuntime

BATCH = 1000
PLAN = """@Plan:playback
define stream Fill (symbol string, price double, sector string);
define stream Q (symbol string, qty int);
{ann}@IndexBy('symbol')
define table T (symbol string, price double, sector string);
from Fill insert into T;
from Q join T on Q.symbol == T.symbol and T.price > 10.0
select Q.symbol as symbol, Q.qty as qty, T.price as price, T.sector as sector
insert into Out;
"""


def variants(keys):
    cached = (
        f"@from(eventtable='rdbms', table.name='{{table}}', cache='LRU', "
        f"cache.size='{max(keys, 1)}')\n"
    )
    return {
        "in-memory @IndexBy": "",
        "SQLite, LRU cache": cached,
        "SQLite, no cache": "@from(eventtable='rdbms', table.name='{table}')\n",
    }


_tables = iter(range(1_000_000))


def run_once(ann, keys, events):
    ann = ann.format(table=f"bench{next(_tables)}")  # a fresh database table per run
    rt = ExecutionPlanRuntime(compile_plan(PLAN.format(ann=ann)))
    count = [0]
    rt.add_callback("Out", lambda b: count.__setitem__(0, count[0] + len(b)))
    rnd = random.Random(3)
    syms = [f"S{i}" for i in range(keys)]
    rt.input_handler("Fill").send_batch(
        [(1, (s, 5.0 + rnd.random() * 100, rnd.choice(("tech", "fin")))) for s in syms]
    )
    q = rt.input_handler("Q")
    batches = [
        [(2 + i + j, (syms[rnd.randrange(keys)], j % 50)) for j in range(min(BATCH, events - i))]
        for i in range(0, events, BATCH)
    ]
    t0, c0 = time.perf_counter(), time.process_time()
    for b in batches:
        q.send_batch(b)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    rt.shutdown()
    return events / wall, events / cpu, count[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--events", type=int, default=200_000)
    ap.add_argument("--keys", type=int, default=1000)
    ap.add_argument(
        "--uncached-events",
        type=int,
        default=20_000,
        help="events for the uncached variant (one SQLite query each)",
    )
    args = ap.parse_args()
    print(
        f"python {sys.version.split()[0]}, {platform.machine()}, {os.cpu_count()} cores, "
        f"load {os.getloadavg()[0]:.1f}; {args.keys} table rows, batches of {BATCH}, "
        f"median of {args.runs} runs after a warm-up"
    )
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "datasources.yaml")
        with open(path, "w") as f:
            f.write(f"datasources:\n  default:\n    url: sqlite:///{folder}/bench.sqlite\n")
        os.environ["CEP_DATASOURCES"] = path
        for name, ann in variants(args.keys).items():
            n = args.uncached_events if "no cache" in name else args.events
            run_once(ann, args.keys, min(n, 5000))  # warm-up
            runs = [run_once(ann, args.keys, n) for _ in range(args.runs)]
            outs = {r[2] for r in runs}
            print(
                f"{name:22s} {n:>8,d} events: "
                f"{statistics.median(r[0] for r in runs):>10,.0f} ev/s wall, "
                f"{statistics.median(r[1] for r in runs):>10,.0f} ev/s CPU "
                f"({', '.join(str(o) for o in sorted(outs))} joined rows)"
            )


if __name__ == "__main__":
    main()
