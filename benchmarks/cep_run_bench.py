"""`cep run` beside the engine it drives, on the same events.

For each workload (a pass-through, a filter, a `length(10)` sum, a group by over 10 symbols;
`--events` events 1 ms apart, seeded) the events are written as a JSON-lines file (compact
JSON, as a producer with msgspec or `json.dumps(separators=...)` writes it) and timed:

- **cep run**: the `cep run` verb in this process (`cep.cli.run.main`): reading the events
  file, compiling the plan, running it, writing the output JSON lines to a file (and, with
  the same timing, to /dev/null). This is the whole verb minus the interpreter's start-up.
- **engine**: the engine's rows API on the same events already decoded: a fresh runtime,
  `rt.input_handler("S").send_batch(batch)` with batches of 1,000 `(timestamp, row)` pairs,
  input checks on (as `benchmarks/siddhi_compare.py`'s "rows"), a row callback that counts.
- **ratio**: cep run / engine, both per CPU second of this process (`resource.getrusage`,
  user + system), medians of `--runs` runs after one warm-up run.

With `--process`, the pass-through is also run as a separate `cep run` process (output to a
file): its CPU (the child's rusage) with and without the interpreter's start-up (measured on an
empty events file) beside it.

    .venv/bin/python benchmarks/cep_run_bench.py [--events 1000000] [--runs 3]
        [--only pass,filter] [--process]
"""

import argparse
import gc
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from types import SimpleNamespace

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import msgspec  # noqa: E402

import cep  # noqa: E402
from benchmarks.siddhi_compare import BATCH, HEAD, stock  # noqa: E402

START = 2_000_000
WORKLOADS = [  # name, query, symbols
    ("pass-through", "from S select * insert into Out;", 100),
    ("filter", "from S[price > 500.0] select sym, price insert into Out;", 100),
    ("length(10) sum", "from S#window.length(10) select sum(price) as s insert into Out;", 100),
    (
        "group by sum, 10 groups",
        "from S select sym, sum(price) as s group by sym insert into Out;",
        10,
    ),
]


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def write_events(path: str, events) -> None:
    enc = msgspec.json.Encoder()
    with open(path, "wb") as f:
        for i in range(0, len(events), BATCH):
            f.write(
                enc.encode_lines(
                    [{"stream": "S", "timestamp": t, "data": r} for t, r in events[i : i + BATCH]]
                )
            )


def engine_once(plan_text: str, events) -> tuple:
    """(CPU s, wall s, outputs) of send_batch over the decoded events, checks on."""
    rt = cep.ExecutionPlanRuntime(cep.compile(plan_text))
    count = [0]
    rt.add_callback("Out", lambda evs: count.__setitem__(0, count[0] + len(evs)))
    send = rt.input_handler("S").send_batch
    batches = [events[i : i + BATCH] for i in range(0, len(events), BATCH)]
    gc.collect()
    c0, t0 = cpu(), time.perf_counter()
    for b in batches:
        if send(b):
            raise SystemExit("the engine rejected events")
    c, w = cpu() - c0, time.perf_counter() - t0
    rt.shutdown()
    return c, w, count[0]


def cep_run_once(plan_path: str, events_path: str, out_path: str) -> tuple:
    """(CPU s, wall s, output lines) of the `cep run` verb in this process."""
    from cep.cli.run import main

    args = SimpleNamespace(plan=plan_path, events=events_path, playback=None, on_error="skip")
    gc.collect()
    with open(out_path, "w", encoding="utf-8") as out:
        c0, t0 = cpu(), time.perf_counter()
        code = main(args, stdout=out, stderr=sys.stderr)
        out.flush()
        c, w = cpu() - c0, time.perf_counter() - t0
    if code != 0:
        raise SystemExit(f"cep run exited {code}")
    lines = 0
    if out_path != os.devnull:
        with open(out_path, "rb") as f:
            lines = sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))
    return c, w, lines


def process_once(plan_path: str, events_path: str, out_path: str) -> tuple:
    """(CPU s, wall s) of a `cep run` process (the child's rusage)."""
    r0, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    with open(out_path, "w") as out:
        subprocess.run(
            [sys.executable, "-m", "cep.cli.main", "run", plan_path, "--events", events_path],
            stdout=out,
            check=True,
            env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path[:1])),
        )
    r1, w = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter() - t0
    return (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime), w


def median_of(fn, runs: int) -> tuple:
    fn()  # warm-up (code paths, allocator)
    results = [fn() for _ in range(runs)]
    return tuple(statistics.median(r[i] for r in results) for i in range(len(results[0]))), results


def rate(n: int, seconds: float) -> str:
    r = n / max(seconds, 1e-9)
    return f"{r / 1e6:.2f}M" if r >= 1e6 else f"{r / 1e3:.0f}K"


def load() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--only", default="", help="comma-separated parts of workload names")
    ap.add_argument(
        "--process",
        action="store_true",
        help="also time the pass-through as a separate `cep run` process",
    )
    args = ap.parse_args(argv)
    wanted = [x for x in args.only.split(",") if x]
    chosen = [w for w in WORKLOADS if not wanted or any(x in w[0] for x in wanted)]
    print(
        f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.node()}, "
        f"{os.cpu_count()} cores, Python {platform.python_version()}, msgspec "
        f"{msgspec.__version__}, {args.events:,} events, medians of {args.runs} runs; "
        f"load average {load()}",
        flush=True,
    )
    print(
        "| workload | outputs | cep run CPU (to a file) | wall | cep run CPU (/dev/null) "
        "| engine send_batch CPU | wall | cep run / engine |"
    )
    print("|---|---|---|---|---|---|---|---|", flush=True)
    with tempfile.TemporaryDirectory(prefix="cep_run_bench_") as tmp:
        for name, query, keys in chosen:
            events = stock(args.events, keys, 1, START)
            plan_path = os.path.join(tmp, "plan.siddhiql")
            events_path = os.path.join(tmp, "events.jsonl")
            out_path = os.path.join(tmp, "out.jsonl")
            with open(plan_path, "w") as f:
                f.write(HEAD + query + "\n")
            write_events(events_path, events)
            (ec, ew, eouts), _ = median_of(lambda: engine_once(HEAD + query, events), args.runs)
            events = None  # the decoded events leave memory before cep run reads the file
            gc.collect()
            (rc, rw, routs), _ = median_of(
                lambda: cep_run_once(plan_path, events_path, out_path), args.runs
            )
            (nc, _, _), _ = median_of(
                lambda: cep_run_once(plan_path, events_path, os.devnull), args.runs
            )
            if routs != eouts:
                raise SystemExit(
                    f"{name}: cep run printed {routs} lines, the engine emitted {eouts}"
                )
            n = args.events
            print(
                f"| {name} | {eouts:,} | {rate(n, rc)} | {rate(n, rw)} | {rate(n, nc)} "
                f"| {rate(n, ec)} | {rate(n, ew)} | {ec / rc:.2f} |",
                flush=True,
            )
            if args.process and name == "pass-through":
                empty = os.path.join(tmp, "empty.jsonl")
                open(empty, "w").close()
                (sc, sw), _ = median_of(lambda: process_once(plan_path, empty, out_path), args.runs)
                (pc, pw), _ = median_of(
                    lambda: process_once(plan_path, events_path, out_path), args.runs
                )
                print(
                    f"# `cep run` process, pass-through: {pc:.2f} s CPU ({rate(n, pc)} "
                    f"events/CPU-s), wall {pw:.2f} s; start-up on an empty file "
                    f"{sc:.2f} s CPU, {sw:.2f} s wall; without it {rate(n, pc - sc)} "
                    f"events/CPU-s",
                    flush=True,
                )
    print(f"# load average after: {load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
