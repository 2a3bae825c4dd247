"""Our engine against the real Siddhi 3.2.15, measured live in the same run, same events.

Every workload goes through our public, checked path: `rt.input_handler(S).send_batch(batch)`
with batches of 1,000 events and input checking on. The same events are sent in every run
(generated once, seeded); each run builds a fresh runtime, warms it up on other events, then
times the sends. The generated events are moved out of the garbage collector's scans
(`gc.freeze()`, as the CEP worker's task processes do after setup): otherwise every full
collection rescans the harness's million pre-built tuples, the harness's cost and not the
engine's (`--no-freeze` shows it).

Siddhi: when the kit (`../shared/siddhi-kit`, or --kit / $SIDDHI_KIT; needs `java`) is there,
each workload's plan and timed events are written as JSON lines and timed by the kit's
`siddhi-bench` in both send modes: `InputHandler.send(Event[1000])` (batch, the counterpart of
our `send_batch`) and `send(timestamp, Object[])` (one event a call). The kit's `siddhi-run`
gives Siddhi's outputs, compared with ours event by event (timestamps and values exactly; for
a partition the order within a batch follows keys, so its outputs are compared per stream as
multisets). Where Siddhi would take less than about 0.5 s of CPU a run (its CPU clock steps
by 10 ms), it is timed on up to 5 copies of the events (2M events at most) one after the
other (timestamps shifted; "x k" in the table). A ratio is printed only where the outputs are
identical, against the batch mode unless the batch API changes the output count (a join
processes each array as one chunk): then against the one-event mode. The mode is named in
the table. Without the kit, reference figures measured earlier with the kit (Siddhi's batch
mode at low load) stand in, marked "ref".

`cep run`'s runner (cep.engine.offline.run_bytes over the file's bytes, as the verb reads
them, in this process, output to memory) is timed over the same events file, and its output compared with the engine's (--no-cep-run skips it
and the kit).

With --columnar, each workload also runs through the public columnar path: the same events
as numpy columns (`send_columns({"sym": object array, "price": float64, "vol": int64},
timestamps)`, checked per column) and a columnar callback (`add_callback(..., columnar=True)`);
queries without a columnar kernel get the events as rows inside the engine.

Prints the median of --runs runs in events per CPU second of this process (the figure to
trust when other jobs load the machine; Siddhi's is the JVM process's CPU time, JIT and GC
threads included) and per wall-clock second, the pre-validated path
(`send_batch(..., validated=True)`) beside them, and the load average before and after.

    .venv/bin/python benchmarks/siddhi_compare.py [--runs 5] [--only filter,join] [--no-validated]
        [--columnar] [--scale 1] [--no-siddhi] [--kit DIR] [--no-cep-run]
"""

import argparse
import gc
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

import cep  # noqa: E402

BATCH = 1000
HEAD = "@Plan:playback\ndefine stream S (sym string, price double, vol long);\n"
PATTERN = (
    "from every e1=S -> e2=S[e2.sym == e1.sym and e2.price > e1.price * 1.05] "
    "within 10 sec select e1.sym as sym, e1.price as p1, e2.price as p2 insert into Out;"
)
JOIN_HEAD = (
    "@Plan:playback\ndefine stream A (sym string, x double);\n"
    "define stream B (sym string, y double);\n"
)
JOIN = (
    "from A#window.length(1000) join B#window.length(1000) on A.sym == B.sym "
    "select A.sym as sym, A.x as x, B.y as y insert into Out;"
)
# A partition over 2,000 keys as a new user writes one: a sliding average and a three-step
# rising pattern per key, and a filter outside the partition.
KEYED_PLAN = HEAD + (
    "partition with (sym of S) begin\n"
    "  from S#window.length(5) select sym, avg(price) as ap insert into Avg;\n"
    "  from every e1=S -> e2=S[price > e1.price] -> e3=S[price > e2.price] within 2 sec\n"
    "  select e1.sym as sym, e1.price as p1, e2.price as p2, e3.price as p3 insert into Rise;\n"
    "end;\n"
    "from S[vol > 990] select sym, price, vol insert into Big;\n"
)
_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# ../shared/siddhi-kit beside the checkout (or beside the folder of worktrees)
KIT_PLACES = [os.path.join(_REPO, *[".."] * up, "shared", "siddhi-kit") for up in (1, 2)]


class Workload:
    """A plan, the events to time ([(stream, batch)], in order), warm-up events, the output
    streams, the reference Siddhi figure (batch mode, measured earlier with the kit; used only without
    the kit) in events per CPU second, and whether its output order follows partition keys
    within a batch (outputs then compared as multisets per stream)."""

    def __init__(self, name, plan, feed, warm, ref, outputs=("Out",), keyed=False, one_event=False):
        self.name, self.plan, self.feed, self.warm = name, plan, feed, warm
        self.ref, self.outputs, self.keyed, self.one_event = ref, outputs, keyed, one_event

    @property
    def events(self):
        return sum(len(b) for _, b in self.feed)


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
    return [
        (start + i, (syms[rnd.randrange(keys)], lo + rnd.random() * span, rnd.randint(1, 1000)))
        for i in range(n)
    ]


def pairs(n, keys, seed, start=1_000_000):
    """n events (ts, (sym, value)) for the join's two streams."""
    rnd = random.Random(seed)
    syms = symbols(keys)
    return [(start + i, (syms[rnd.randrange(keys)], float(i))) for i in range(n)]


def chunks(events, stream="S"):
    return [(stream, events[i : i + BATCH]) for i in range(0, len(events), BATCH)]


def join_feed(n, keys, seed, start):
    a = chunks(pairs(n // 2, keys, seed, start), "A")
    b = chunks(pairs(n // 2, keys, seed + 1, start), "B")
    return [x for ab in zip(a, b) for x in ab]


def workloads(scale):
    """The 8 reference workloads and the partition over 2,000 keys; `scale`
    shrinks or grows the event counts (tests, smoke; 1 = 1M events where Siddhi is fast,
    enough for the kit's 10 ms CPU clock)."""
    n = max(BATCH, int(1_000_000 * scale))
    mid = max(BATCH, int(300_000 * scale))
    small = max(BATCH, int(200_000 * scale))
    tail = 2_000_000  # the timed events start after the warm-up's timestamps
    pat = dict(lo=100.0, span=100.0)
    agg = "from S#window.{w} select {s} insert into Out;"
    return [
        Workload(
            "filter + projection",
            HEAD + "from S[price > 500.0] select sym, price insert into Out;",
            chunks(stock(n, 100, 1, tail)),
            chunks(stock(5000, 100, 2)),
            5.6e6,
        ),
        Workload(
            "time(1 min) avg/sum/count group by",
            HEAD
            + agg.format(
                w="time(1 min)",
                s="sym, avg(price) as ap, sum(price) as sp, count() as c group by sym",
            ),
            chunks(stock(n, 100, 1, tail)),
            chunks(stock(70_000, 100, 2)),
            2.1e6,
        ),
        Workload(
            "length(10000) sum",
            HEAD + agg.format(w="length(10000)", s="sum(price) as s"),
            chunks(stock(n, 100, 1, tail)),
            chunks(stock(20_000, 100, 2)),
            6.0e6,
        ),
        Workload(
            "length(10) sum",
            HEAD + agg.format(w="length(10)", s="sum(price) as s"),
            chunks(stock(n, 100, 1, tail)),
            chunks(stock(5000, 100, 2)),
            7.3e6,
        ),
        Workload(
            "partitioned pattern, 100 keys",
            HEAD + f"partition with (sym of S) begin {PATTERN} end;",
            chunks(stock(n, 100, 1, tail, **pat)),
            chunks(stock(20_000, 100, 2, **pat)),
            0.28e6,
            keyed=True,
        ),
        Workload(
            "group by sum, 10 groups",
            HEAD + "from S select sym, sum(price) as s group by sym insert into Out;",
            chunks(stock(n, 10, 1, tail)),
            chunks(stock(5000, 10, 2)),
            6.1e6,
        ),
        Workload(
            "pattern (no partition)",
            HEAD + PATTERN,  # Siddhi: ~5K events/s
            chunks(stock(max(BATCH, int(20_000 * scale)), 100, 1, tail, **pat)),
            chunks(stock(20_000, 100, 2, **pat)),
            5e3,
        ),
        Workload(
            "join length(1000) x length(1000)",
            JOIN_HEAD + JOIN,
            join_feed(small // 4, 100, 1, tail),
            join_feed(4000, 100, 3, 1_000_000),
            27e3,
            one_event=True,
        ),
        Workload(
            "partition 2,000 keys: length(5) avg + 3-step pattern, filter outside",
            KEYED_PLAN,
            chunks(stock(mid, 2000, 1, tail)),
            chunks(stock(20_000, 2000, 2)),
            77.5e3,
            outputs=("Avg", "Rise", "Big"),
            keyed=True,
        ),
    ]


def run_once(w, validated, collect=None):
    """(events/s wall, events/s CPU, outputs) of one fresh runtime over w's events; with
    `collect` (a dict), no warm-up (the runtime then sees exactly the events the kit gets)
    and each output stream's (timestamp, row) pairs are added to it."""
    rt = cep.ExecutionPlanRuntime(cep.compile(w.plan))
    count = [0]
    for sid in w.outputs:
        rt.add_callback(sid, lambda evs: count.__setitem__(0, count[0] + len(evs)))
    handlers = {sid: rt.input_handler(sid) for sid, _ in w.feed + w.warm}
    for sid, b in w.warm if collect is None else ():
        handlers[sid].send_batch(b)
    count[0] = 0
    if collect is not None:
        for sid in w.outputs:
            rt.add_callback(sid, collect.setdefault(sid, []).extend)
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


_NP = {
    "string": object,
    "double": np.float64,
    "float": np.float32,
    "long": np.int64,
    "int": np.int32,
    "bool": bool,
}


def columns(schema, batch):
    """A batch of (ts, row) as send_columns' arguments, by the stream's attribute types."""
    ts = np.fromiter((t for t, _ in batch), np.int64, len(batch))
    data = {}
    for (name, typ), col in zip(schema, zip(*[r for _, r in batch])):
        a = np.empty(len(col), _NP[typ]) if _NP[typ] is object else np.array(col, _NP[typ])
        if _NP[typ] is object:
            a[:] = col
        data[name] = a
    return data, ts


def run_columnar(w):
    """(events/s wall, events/s CPU, outputs) through send_columns, a columnar callback."""
    plan = cep.compile(w.plan)
    schemas = {d.id: [(a.name, a.type.value) for a in d.attributes] for d in plan.streams}
    rt = cep.ExecutionPlanRuntime(plan)
    count = [0]
    for sid in w.outputs:
        rt.add_callback(sid, lambda c: count.__setitem__(0, count[0] + len(c)), columnar=True)
    handlers = {sid: rt.input_handler(sid) for sid, _ in w.feed + w.warm}
    for sid, b in w.warm:
        handlers[sid].send_columns(*columns(schemas[sid], b))
    count[0] = 0
    sends = [(handlers[sid].send_columns, columns(schemas[sid], b)) for sid, b in w.feed]
    gc.collect()
    t0, c0 = time.perf_counter(), time.process_time()
    for send, (data, ts) in sends:
        bad = send(data, ts)
        if bad:
            raise SystemExit(f"{w.name}: {len(bad)} events rejected (columnar): {bad[0]}")
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    rt.shutdown()
    return w.events / wall, w.events / max(cpu, 1e-9), count[0]


def measure(w, runs, validated, columnar=False):
    one = (lambda: run_columnar(w)) if columnar else (lambda: run_once(w, validated))
    one()  # warm-up run (code paths, allocator)
    results = [one() for _ in range(runs)]
    return (
        statistics.median(r[0] for r in results),
        statistics.median(r[1] for r in results),
        results[0][2],
        [r[1] for r in results],
    )


# -- the live Siddhi kit ------------------------------------------------------------------
def find_kit(path=None):
    """The kit's folder when its tools and a `java` are there, else None."""
    java = os.environ.get("SIDDHI_JAVA") or shutil.which("java")
    for kit in (
        [path or os.environ.get("SIDDHI_KIT")]
        if (path or os.environ.get("SIDDHI_KIT"))
        else KIT_PLACES
    ):
        if java and all(
            os.access(os.path.join(kit, t), os.X_OK) for t in ("siddhi-run", "siddhi-bench")
        ):
            return os.path.abspath(kit)
    return None


def write_events(w, folder, copies=1, name="events.jsonl"):
    """w's plan and timed events as the kit's input files -> (plan path, events path); with
    `copies`, the events repeated, each copy's timestamps after the previous copy's (plus a
    gap of 10 minutes, longer than any window here)."""
    plan, events = os.path.join(folder, "plan.siddhiql"), os.path.join(folder, name)
    with open(plan, "w") as f:
        f.write(w.plan)
    stamps = [t for _, b in w.feed for t, _ in b]
    span = max(stamps) - min(stamps) + 600_000
    with open(events, "w") as f:
        for c in range(copies):
            for sid, b in w.feed:
                f.write(
                    "".join(
                        json.dumps({"stream": sid, "timestamp": t + c * span, "data": list(r)})
                        + "\n"
                        for t, r in b
                    )
                )
    return plan, events


def copies_for(w, seconds=0.5, most=5, cap=2_000_000):
    """How many copies of w's events make a Siddhi run take about `seconds` of CPU at its
    reference rate (the kit reads the JVM's CPU clock in 10 ms steps), at most `most` and
    `cap` events in all (the kit holds them in its 2 GB heap)."""
    return max(1, min(most, cap // w.events, -(-int(w.ref * seconds) // w.events)))


def siddhi_outputs(kit, plan, events, streams):
    """{stream: [(timestamp, data list), ...]} that Siddhi emits (one event a call)."""
    out = subprocess.run(
        [os.path.join(kit, "siddhi-run"), plan, events, "--streams", ",".join(streams)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    got = {s: [] for s in streams}
    for line in out.splitlines():
        if line.startswith("{"):
            e = json.loads(line)
            got[e["stream"]].append((e["timestamp"], e["data"]))
    return got


def siddhi_bench(kit, plan, events, streams, batch, runs, warmup):
    """The kit's summary line for one send mode: median events per CPU s and outputs."""
    done = subprocess.run(
        [
            os.path.join(kit, "siddhi-bench"),
            plan,
            events,
            "--stream",
            ",".join(streams),
            "--batch",
            str(batch),
            "--runs",
            str(runs),
            "--warmup",
            str(warmup),
        ],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise SystemExit(f"siddhi-bench failed ({done.returncode}): {done.stderr[-800:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def same_outputs(ours, theirs, keyed):
    """None when both engines emitted the same events, else how they differ. Values are
    compared exactly (JSON numbers of Siddhi as Python numbers); with `keyed`, per stream as
    multisets (a partition orders one batch's outputs by key)."""
    for sid, want in theirs.items():
        have = [(t, list(r)) for t, r in ours.get(sid, [])]
        if len(have) != len(want):
            return f"{sid}: Siddhi {len(want):,} events, ours {len(have):,}"
        if keyed:
            have, want = sorted(have, key=repr), sorted(want, key=repr)
        for i, (h, s) in enumerate(zip(have, want)):
            if h != (s[0], s[1]):
                return f"{sid}[{i}]: Siddhi {s}, ours {h}"
    return None


def cep_run(w, events, runs):
    """(median events per CPU s of `cep run`'s runner over the events file, in this
    process, output to memory; {stream: [(ts, data)]} it printed)."""
    from cep.engine.offline import run_bytes

    plan = cep.compile(w.plan)
    with open(events, "rb") as f:
        data = f.read()
    n = data.count(b"\n")
    rates, text = [], None
    for _ in range(runs):
        chunks, bad = [], []
        gc.collect()
        c0 = time.process_time()
        run_bytes(plan, data, chunks.append, bad.append)
        rates.append(n / max(time.process_time() - c0, 1e-9))
        if bad:
            raise SystemExit(f"{w.name}: cep run reported {bad[0]}")
        text = chunks
    printed = {}
    for line in b"".join(text).decode().splitlines():
        e = json.loads(line)
        printed.setdefault(e["stream"], []).append((e["timestamp"], e["data"]))
    return statistics.median(rates), printed


def live(w, kit, runs, warmup):
    """{'run': cep run's events per CPU s, 'run_diff': how its output differs from ours
    (None: same), and with the kit 'batch' and 'one' (siddhi-bench summaries), 'diff'
    (how our output differs from Siddhi's)} on w's timed events."""
    with tempfile.TemporaryDirectory(prefix="siddhi_compare_") as tmp:
        plan, events = write_events(w, tmp)
        ours = {}
        run_once(w, False, collect=ours)
        res = {}
        res["run"], printed = cep_run(w, events, max(1, min(runs, 3)))
        as_lists = {sid: [(t, list(r)) for t, r in printed.get(sid, [])] for sid in w.outputs}
        res["run_diff"] = same_outputs(ours, as_lists, w.keyed)
        if kit is None:
            return res
        res["diff"] = same_outputs(ours, siddhi_outputs(kit, plan, events, w.outputs), w.keyed)
        res["copies"] = copies_for(w)
        if res["copies"] > 1:
            os.remove(events)
            _, events = write_events(w, tmp, res["copies"], "timed.jsonl")
        for mode, batch in (("batch", BATCH), ("one", 1)):
            res[mode] = siddhi_bench(kit, plan, events, w.outputs, batch, runs, warmup)
        return res


def fmt(rate):
    if not rate:
        return ""
    return f"{rate / 1e6:.2f}M" if rate >= 1e6 else f"{rate / 1e3:.0f}K"


def reference(w, live):
    """(Siddhi events per CPU s to compare with, its mode's name, outputs identical?)."""
    if live is None or "batch" not in live:
        return w.ref, "ref, batch", True
    batch_changes = live["batch"]["outputs"] != live["one"]["outputs"]
    if w.one_event or batch_changes:
        return live["one"]["median_events_per_cpu_s"], "one-event", live["diff"] is None
    return live["batch"]["median_events_per_cpu_s"], "batch", live["diff"] is None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--only", default="", help="comma-separated parts of workload names")
    ap.add_argument("--scale", type=float, default=1.0, help="event counts times this")
    ap.add_argument("--no-validated", action="store_true", help="skip the pre-validated figures")
    ap.add_argument(
        "--columnar", action="store_true", help="also time the public columnar path (send_columns)"
    )
    ap.add_argument(
        "--no-freeze",
        action="store_true",
        help="leave the generated events to the garbage collector's scans",
    )
    ap.add_argument(
        "--no-siddhi",
        action="store_true",
        help="do not run the kit; compare with the reference figures",
    )
    ap.add_argument("--kit", default=None, help="the Siddhi kit's folder")
    ap.add_argument("--siddhi-warmup", type=int, default=5)
    ap.add_argument(
        "--no-cep-run",
        action="store_true",
        help="skip `cep run` over the events file (and the kit)",
    )
    args = ap.parse_args(argv)
    wanted = [x for x in args.only.split(",") if x]
    chosen = [w for w in workloads(args.scale) if not wanted or any(x in w.name for x in wanted)]
    kit = None if args.no_siddhi else find_kit(args.kit)
    if not args.no_freeze:  # the harness's own events (up to 1M) are not the engine's state
        gc.collect()
        gc.freeze()
    print(
        f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.node()}, "
        f"{os.cpu_count()} cores, Python {platform.python_version()}, medians of "
        f"{args.runs} runs, batches of {BATCH}; Siddhi: "
        f"{'live, kit ' + kit if kit else 'reference figures (no kit)'}; load average "
        f"{'/'.join(f'{x:.2f}' for x in os.getloadavg())}",
        flush=True,
    )
    print(
        "| workload | Siddhi batch (CPU) | Siddhi one-event (CPU) | same outputs "
        "| ours, checked rows: CPU (runs) | wall | rows / Siddhi (mode) "
        "| pre-validated CPU | columnar CPU | columnar / Siddhi | cep run CPU "
        "| cep run / Siddhi | events | outputs |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|", flush=True)
    for w in chosen:
        wall, cpu, outs, all_runs = measure(w, args.runs, False)
        pre = "" if args.no_validated else fmt(measure(w, args.runs, True)[1])
        col = ("", "", "") if not args.columnar else measure(w, args.runs, False, True)
        if args.columnar and col[2] != outs:
            raise SystemExit(f"{w.name}: columnar gave {col[2]} outputs, rows {outs}")
        got = None if args.no_cep_run else live(w, kit, args.runs, args.siddhi_warmup)
        base, mode, same = reference(w, got)
        run_rate = run_ratio = ""
        if got is not None:
            run_rate = (
                fmt(got["run"]) if got["run_diff"] is None else f"output differs: {got['run_diff']}"
            )
            run_ratio = f"{got['run'] / base:.2f}" if same and got["run_diff"] is None else ""
        live_ = got if got is not None and "batch" in got else None
        if live_ is None:
            sb, so, sm = fmt(w.ref) + " (ref)", "", "not checked"
        else:
            k = live_["copies"]
            sb = fmt(live_["batch"]["median_events_per_cpu_s"]) + (f" (x {k})" if k > 1 else "")
            so = fmt(live_["one"]["median_events_per_cpu_s"])
            sm = "yes" if same else f"NO: {live_['diff']}"
        r = f"{cpu / base:.2f} ({mode})" if same else "- (outputs differ)"
        rc = f"{col[1] / base:.2f}" if same and col[1] else ""
        print(
            f"| {w.name} | {sb} | {so} | {sm} | {fmt(cpu)} "
            f"({'/'.join(fmt(x) for x in all_runs)}) | {fmt(wall)} | {r} | {pre} "
            f"| {fmt(col[1])} | {rc} | {run_rate} | {run_ratio} | {w.events:,} "
            f"| {outs:,} |",
            flush=True,
        )
    print(f"# load average after: {'/'.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
