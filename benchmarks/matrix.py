"""The workload matrix: many plan shapes, each through our checked rows API, our columnar API,
`cep run`, and the real Siddhi 3.2.15 in both send modes, in one run, same events.

`benchmarks/siddhi_compare.py` times nine workloads in depth; this script covers the language
as a user meets it: every window, the aggregators with group by over 10, 10,000 and 1,000,000
groups, value and range partitions over 10, 10,000 and 1,000,000 keys, joins (window x
window, stream x table with and without `@IndexBy`, outer, unidirectional), table insert /
update / delete / `in`, patterns of 2, 3 and 5 states with counts, logical states and
`within`, sequences, output rate limiting, a chain of 5 queries, and the `str:`/`math:`
extension functions. The timing and comparison machinery is siddhi_compare's:

- **rows**: `send_batch` with batches of 1,000 events, input checks on, a row callback;
  median of --runs fresh runtimes, each warmed up on other events first; events per CPU
  second of this process.
- **columnar**: `send_columns` with numpy columns of the same events and a columnar callback
  (queries without a numpy kernel get rows inside the engine); its output count must equal
  the rows path's.
- **cep run**: `cep run`'s runner over the same events as a JSON-lines file; its output must
  equal the rows path's event for event.
- **Siddhi** (when the kit is there: ../shared/siddhi-kit, --kit or $SIDDHI_KIT): `siddhi-run`
  gives its outputs, compared with ours; `siddhi-bench` times `InputHandler.send(Event[1000])`
  ("batch") and `send(timestamp, Object[])` ("one-event"), per CPU second of the JVM. The
  ratio is against the batch mode unless Siddhi's batch API changes the output (then
  one-event) and only where the outputs are identical. Without the kit the Siddhi columns are
  empty: there are no reference figures for these workloads.

The table ends with a count of the workloads at or above 1x and 2x through rows.

    .venv/bin/python benchmarks/matrix.py [--runs 3] [--scale 0.2] [--only window,join]
        [--no-siddhi] [--kit DIR] [--list]
"""

import argparse
import gc
import os
import platform
import random
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from siddhi_compare import (
    BATCH,
    Workload,
    find_kit,
    fmt,
    live,
    reference,  # noqa: E402
    run_columnar,
    run_once,
    symbols,
)

HEAD = "@Plan:playback\ndefine stream S (sym string, price double, vol long);\n"


# -- events --------------------------------------------------------------------------------
def stock(n, keys, seed, start, lo=0.0, span=1000.0):
    """n events (ts, (sym, price, vol)) 1 ms apart over `keys` symbols."""
    rnd = random.Random(seed)
    syms = symbols(keys) if keys <= 100_000 else None
    out = []
    for i in range(n):
        k = rnd.randrange(keys)
        out.append(
            (
                start + i,
                (syms[k] if syms else f"S{k}", lo + rnd.random() * span, rnd.randint(1, 1000)),
            )
        )
    return out


def with_ts(events):
    """(ts, (sym, price, ts)): the event time as an attribute, for externalTime windows."""
    return [(t, (r[0], r[1], t)) for t, r in events]


def batches(events, stream="S"):
    return [(stream, events[i : i + BATCH]) for i in range(0, len(events), BATCH)]


def interleave(*feeds):
    """The batches of several streams, one of each in turn."""
    out = []
    for group in zip(*feeds):
        out.extend(group)
    return out


def table_rows(keys, seed, start):
    """One (sym, price) row per key, for filling a table."""
    rnd = random.Random(seed)
    return [(start + i, (s, rnd.random() * 1000.0)) for i, s in enumerate(symbols(keys))]


# -- the workloads -------------------------------------------------------------------------
class Spec:
    """A workload before its events are generated: name, plan, a function (n, seed, start)
    -> feed, the full-scale event count, whether outputs follow partition keys within a batch
    (compared as multisets), the output streams, a rough Siddhi rate (events per CPU s) used
    only to pick how many copies of the events the kit times, and whether Siddhi's batch API
    is known to change this workload's output."""

    def __init__(
        self, name, plan, feed, n, keyed=False, outputs=("Out",), guess=2e6, one_event=False
    ):
        self.name, self.plan, self.feed, self.n = name, plan, feed, n
        self.keyed, self.outputs, self.guess, self.one_event = keyed, outputs, guess, one_event

    def build(self, scale):
        n = max(BATCH, int(self.n * scale))
        feed = self.feed(n, 1, 2_000_000)
        # a table's rows are filled by the timed feed only (the warm-up would add them twice)
        warm = getattr(self.feed, "inner", self.feed)(max(BATCH, n // 20), 2, 1_000_000)
        return Workload(
            self.name,
            self.plan,
            feed,
            warm,
            self.guess,
            outputs=self.outputs,
            keyed=self.keyed,
            one_event=self.one_event,
        )


def on_s(keys, **kw):
    return lambda n, seed, start: batches(stock(n, keys, seed, start, **kw))


def on_e(keys):
    return lambda n, seed, start: batches(with_ts(stock(n, keys, seed, start)), "E")


def table_then(keys, feed):
    """The table filled with one row per key, then `feed`'s batches."""

    def filled(n, seed, start):
        return batches(table_rows(keys, seed, start - keys), "TIn") + feed(n, seed, start)

    filled.inner = feed
    return filled


def two_streams(keys, a="S", b="S2", **kw):
    return lambda n, seed, start: interleave(
        batches(stock(n // 2, keys, seed, start, **kw), a),
        batches(stock(n // 2, keys, seed + 7, start, **kw), b),
    )


E_HEAD = "@Plan:playback\ndefine stream E (sym string, price double, ts long);\n"
S2_HEAD = HEAD + "define stream S2 (sym string, price double, vol long);\n"
T_HEAD = HEAD + "define stream TIn (sym string, price double);\n"
TABLE = "define table T (sym string, price double);\nfrom TIn insert into T;\n"
TABLE_IX = "@IndexBy('sym')\n" + TABLE
UPD_HEAD = T_HEAD + "define stream Q (sym string, price double, vol long);\n"
WIN = "from S#window.{w} select {s} insert into Out;"
PAT2 = (
    "from every e1=S -> e2=S[sym == e1.sym and price > e1.price * 1.05] within 10 sec "
    "select e1.sym as sym, e1.price as p1, e2.price as p2 insert into Out;"
)
CHAIN = (
    "from S[vol > 100] select sym, price, vol insert into C1;\n"
    "from C1 select sym, price * 1.1 as price, vol insert into C2;\n"
    "from C2#window.length(100) select sym, sum(price) as s, count() as c group by sym "
    "insert into C3;\n"
    "from C3[c > 1] select sym, s / c as a insert into C4;\n"
    "from C4[a > 100.0] select sym, a insert into Out;\n"
)
EXT = (
    "from S select str:upper(sym) as u, str:length(sym) as n, str:concat(sym, '-', sym) "
    "as c, math:abs(price) as a, math:sqrt(vol) as r, math:floor(price) as f, "
    "math:max(price, 100.0) as m, math:round(price) as rp insert into Out;"
)


def specs():
    M = 1_000_000
    return [
        # windows
        Spec(
            "window length(10) sum",
            HEAD + WIN.format(w="length(10)", s="sum(price) as s"),
            on_s(100),
            M,
            guess=7e6,
        ),
        Spec(
            "window lengthBatch(100) sum, count",
            HEAD + WIN.format(w="lengthBatch(100)", s="sum(price) as s, count() as c"),
            on_s(100),
            M,
            guess=8e6,
        ),
        Spec(
            "window time(1 sec) avg",
            HEAD + WIN.format(w="time(1 sec)", s="avg(price) as a"),
            on_s(100),
            M,
            guess=4e6,
        ),
        Spec(
            "window timeBatch(1 sec) sum group by sym",
            HEAD + WIN.format(w="timeBatch(1 sec)", s="sym, sum(price) as s group by sym"),
            on_s(100),
            M,
            guess=4e6,
        ),
        Spec(
            "window externalTime(ts, 1 sec) max",
            E_HEAD + "from E#window.externalTime(ts, 1 sec) select max(price) as m "
            "insert into Out;",
            on_e(100),
            M,
            guess=3e6,
        ),
        Spec(
            "window externalTimeBatch(ts, 1 sec) count",
            E_HEAD + "from E#window.externalTimeBatch(ts, 1 sec) select count() as c "
            "insert into Out;",
            on_e(100),
            M,
            guess=5e6,
        ),
        Spec(
            "window timeLength(1 sec, 100) sum",
            HEAD + WIN.format(w="timeLength(1 sec, 100)", s="sum(price) as s"),
            on_s(100),
            M,
            guess=3e6,
        ),
        Spec(
            "window sort(10, price) min",
            HEAD + WIN.format(w="sort(10, price, 'asc')", s="sym, min(price) as m"),
            on_s(100),
            300_000,
            guess=1e6,
        ),
        Spec(
            "window frequent(5, sym) count",
            HEAD + WIN.format(w="frequent(5, sym)", s="sym, count() as c"),
            on_s(20),
            300_000,
            guess=1e6,
        ),
        Spec(
            "window lossyFrequent(0.1, 0.01, sym) count",
            HEAD + WIN.format(w="lossyFrequent(0.1, 0.01, sym)", s="sym, count() as c"),
            on_s(5),
            300_000,
            guess=1e6,
        ),
        Spec(
            "window unique(sym) sum",
            HEAD + WIN.format(w="unique(sym)", s="sum(price) as s"),
            on_s(100),
            M,
            guess=3e6,
        ),
        Spec(
            "window firstUnique(sym) count",
            HEAD + WIN.format(w="firstUnique(sym)", s="sym, count() as c"),
            on_s(1000),
            M,
            guess=5e6,
        ),
        # aggregators and group by
        Spec(
            "aggregators length(100): sum avg count min max stddev",
            HEAD
            + WIN.format(
                w="length(100)",
                s="sum(price) as s, avg(price) as a, "
                "count() as c, min(price) as mn, max(price) as mx, "
                "stddev(price) as sd",
            ),
            on_s(100),
            300_000,
            guess=2e6,
        ),
        Spec(
            "aggregators: distinctcount, minForever, maxForever",
            HEAD + "from S select distinctcount(sym) as d, minForever(price) as mn, "
            "maxForever(price) as mx insert into Out;",
            on_s(1000),
            M,
            guess=4e6,
        ),
        Spec(
            "group by sum, 10 groups",
            HEAD + "from S select sym, sum(price) as s group by sym insert into Out;",
            on_s(10),
            M,
            guess=6e6,
        ),
        Spec(
            "group by time(10 sec) avg, 10,000 groups",
            HEAD + WIN.format(w="time(10 sec)", s="sym, avg(price) as a group by sym"),
            on_s(10_000),
            300_000,
            guess=1.5e6,
        ),
        Spec(
            "group by count, 1,000,000 groups",
            HEAD + "from S select sym, count() as c group by sym insert into Out;",
            on_s(M),
            300_000,
            guess=2e6,
        ),
        # partitions
        Spec(
            "partition 10 keys: length(5) avg",
            HEAD + "partition with (sym of S) begin "
            "from S#window.length(5) select sym, avg(price) as a insert into Out; end;",
            on_s(10),
            300_000,
            keyed=True,
            guess=5e5,
        ),
        Spec(
            "partition 10,000 keys: length(5) avg",
            HEAD + "partition with (sym of S) begin "
            "from S#window.length(5) select sym, avg(price) as a insert into Out; end;",
            on_s(10_000),
            200_000,
            keyed=True,
            guess=2e5,
        ),
        Spec(
            "partition 1,000,000 keys: filter + count",
            HEAD + "partition with (sym of S) "
            "begin from S[price > 100.0] select sym, count() as c insert into Out; end;",
            on_s(M),
            200_000,
            keyed=True,
            guess=1e5,
        ),
        Spec(
            "range partition, 3 ranges: length(10) sum",
            HEAD + "partition with (price < "
            "300.0 as 'low' or price >= 300.0 and price < 700.0 as 'mid' or price >= 700.0 "
            "as 'high' of S) begin from S#window.length(10) select sum(price) as s "
            "insert into Out; end;",
            on_s(100),
            300_000,
            keyed=True,
            guess=5e5,
        ),
        Spec(
            "partition 100 keys: 2-state pattern",
            HEAD + "partition with (sym of S) begin " + PAT2 + " end;",
            on_s(100, lo=100.0, span=100.0),
            300_000,
            keyed=True,
            guess=3e5,
        ),
        # joins
        Spec(
            "join length(1000) x length(1000) on sym",
            S2_HEAD + "from S#window.length(1000) "
            "join S2#window.length(1000) on S.sym == S2.sym select S.sym as sym, S.price as "
            "p, S2.price as p2 insert into Out;",
            two_streams(100),
            20_000,
            guess=3e4,
            one_event=True,
        ),
        Spec(
            "join stream x table (no index), 100 rows",
            T_HEAD + TABLE + "from S join T on "
            "S.sym == T.sym select S.sym as sym, S.price as p, T.price as tp insert into Out;",
            table_then(100, on_s(100)),
            300_000,
            guess=5e5,
        ),
        Spec(
            "join stream x table @IndexBy(sym), 10,000 rows",
            T_HEAD + TABLE_IX + "from S "
            "join T on S.sym == T.sym select S.sym as sym, S.price as p, T.price as tp "
            "insert into Out;",
            table_then(10_000, on_s(10_000)),
            300_000,
            guess=1e6,
        ),
        Spec(
            "left outer join length(10) x length(10)",
            S2_HEAD + "from S#window.length(10) "
            "left outer join S2#window.length(10) on S.sym == S2.sym select S.sym as sym, "
            "S.price as p, S2.price as p2 insert into Out;",
            two_streams(100),
            200_000,
            guess=1e6,
            one_event=True,
        ),
        Spec(
            "unidirectional join S x S2 length(100)",
            S2_HEAD + "from S unidirectional join "
            "S2#window.length(100) on S.sym == S2.sym select S.sym as sym, S.price as p, "
            "S2.price as p2 insert into Out;",
            two_streams(100),
            200_000,
            guess=1e6,
            one_event=True,
        ),
        # tables
        Spec(
            "table in: filter on membership, 1,000 rows",
            T_HEAD + TABLE + "from S[(sym == T.sym) in T] select sym, price insert into Out;",
            table_then(1000, on_s(2000)),
            300_000,
            guess=1e6,
        ),
        Spec(
            "table update, then join",
            UPD_HEAD + TABLE_IX + "from S select sym, price "
            "update T on T.sym == sym;\nfrom Q join T on Q.sym == T.sym select Q.sym as sym, "
            "T.price as tp insert into Out;",
            table_then(1000, two_streams(1000, "S", "Q")),
            300_000,
            guess=1e6,
        ),
        Spec(
            "table delete, then in",
            UPD_HEAD + TABLE_IX + "from S[vol > 500] select sym "
            "delete T on T.sym == sym;\nfrom Q[(sym == T.sym) in T] select sym, price "
            "insert into Out;",
            table_then(1000, two_streams(1000, "S", "Q")),
            300_000,
            guess=1e6,
        ),
        # patterns and sequences
        Spec(
            "pattern 2 states within 10 sec",
            HEAD + PAT2,
            on_s(100, lo=100.0, span=100.0),
            20_000,
            guess=2e4,
        ),
        Spec(
            "pattern 3 states with a count <2:3> within 1 sec",
            HEAD + "from every e1=S -> "
            "e2=S[sym == e1.sym and price > e1.price]<2:3> -> e3=S[sym == e1.sym and price < "
            "e1.price] within 1 sec select e1.sym as sym, e1.price as p1, e3.price as p3 "
            "insert into Out;",
            on_s(100),
            20_000,
            guess=2e4,
        ),
        Spec(
            "pattern with a logical and-state within 1 sec",
            HEAD + "from every "
            "e1=S[price > 990.0] -> e2=S[price < 10.0] and e3=S[vol > 995] within 1 sec "
            "select e1.price as p1, e2.price as p2, e3.vol as v3 insert into Out;",
            on_s(100),
            300_000,
            guess=1e6,
        ),
        Spec(
            "pattern 5 states within 1 sec",
            HEAD + "from every e1=S[price > 900.0] -> "
            "e2=S[sym == e1.sym and price > e1.price] -> e3=S[sym == e1.sym] -> "
            "e4=S[sym == e1.sym and price < e1.price] -> e5=S[sym == e1.sym] within 1 sec "
            "select e1.sym as sym, e1.price as p1, e5.price as p5 insert into Out;",
            on_s(100),
            100_000,
            guess=2e5,
        ),
        Spec(
            "sequence of 3 rising prices",
            HEAD + "from every e1=S, e2=S[price > e1.price], "
            "e3=S[price > e2.price] select e1.price as p1, e3.price as p3 insert into Out;",
            on_s(100),
            300_000,
            guess=1e6,
        ),
        # output rate limiting, chains, extensions
        Spec(
            "output last every 100 events, group by",
            HEAD + "from S select sym, sum(price) "
            "as s group by sym output last every 100 events insert into Out;",
            on_s(10),
            M,
            guess=5e6,
        ),
        Spec(
            "output first every 1 sec",
            HEAD + "from S select sym, price output first every 1 sec insert into Out;",
            on_s(100),
            M,
            guess=6e6,
        ),
        Spec("chain of 5 queries", HEAD + CHAIN, on_s(100), 300_000, guess=1.5e6),
        Spec("str:/math: projection", HEAD + EXT, on_s(100), 300_000, guess=2e6),
    ]


def median_of(one, runs):
    one()  # warm-up run (code paths, allocator)
    results = [one() for _ in range(runs)]
    return statistics.median(r[1] for r in results), results[0][2]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument(
        "--scale",
        type=float,
        default=0.2,
        help="event counts times this (1 = up to 1M events a workload)",
    )
    ap.add_argument("--only", default="", help="comma-separated parts of workload names")
    ap.add_argument("--no-siddhi", action="store_true", help="do not run the kit")
    ap.add_argument("--kit", default=None, help="the Siddhi kit's folder")
    ap.add_argument("--siddhi-warmup", type=int, default=2)
    ap.add_argument("--list", action="store_true", help="print the workloads and exit")
    args = ap.parse_args(argv)
    wanted = [x for x in args.only.split(",") if x]
    chosen = [s for s in specs() if not wanted or any(x in s.name for x in wanted)]
    if args.list:
        for s in chosen:
            print(f"{s.name}\n    {s.plan.replace(chr(10), chr(10) + '    ')}")
        return 0
    kit = None if args.no_siddhi else find_kit(args.kit)
    print(
        f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.node()}, "
        f"{os.cpu_count()} cores, Python {platform.python_version()}, medians of "
        f"{args.runs} runs, batches of {BATCH}, scale {args.scale}; Siddhi: "
        f"{'live, kit ' + kit if kit else 'not run (no kit)'}; load average "
        f"{'/'.join(f'{x:.2f}' for x in os.getloadavg())}",
        flush=True,
    )
    print(
        "| workload | events | outputs | Siddhi batch | Siddhi one-event | same outputs "
        "| rows | rows / Siddhi (mode) | columnar | columnar / Siddhi | cep run "
        "| cep run / Siddhi |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|", flush=True)
    at1 = at2 = compared = 0
    for spec in chosen:
        w = spec.build(args.scale)
        gc.collect()
        gc.freeze()  # the harness's events are not the engine's state
        rows, outs = median_of(lambda w=w: run_once(w, False), args.runs)
        col, col_outs = median_of(lambda w=w: run_columnar(w), args.runs)
        col_txt = fmt(col) if col_outs == outs else f"{fmt(col)} (outputs {col_outs:,})"
        got = live(w, kit, args.runs, args.siddhi_warmup)
        run_txt = fmt(got["run"]) if got["run_diff"] is None else f"differs: {got['run_diff']}"
        sb = so = same = r_rows = r_col = r_run = ""
        if "batch" in got:
            base, mode, identical = reference(w, got)
            k = got["copies"]
            sb = fmt(got["batch"]["median_events_per_cpu_s"]) + (f" (x {k})" if k > 1 else "")
            so = fmt(got["one"]["median_events_per_cpu_s"])
            same = "yes" if identical else f"NO: {got['diff']}"
            if identical:
                compared += 1
                at1 += rows >= base
                at2 += rows >= 2 * base
                r_rows = f"{rows / base:.2f} ({mode})"
                r_col = f"{col / base:.2f}" if col_outs == outs else ""
                r_run = f"{got['run'] / base:.2f}" if got["run_diff"] is None else ""
        print(
            f"| {w.name} | {w.events:,} | {outs:,} | {sb} | {so} | {same} | {fmt(rows)} "
            f"| {r_rows} | {col_txt} | {r_col} | {run_txt} | {r_run} |",
            flush=True,
        )
        gc.unfreeze()  # this workload's events may go (the next one builds its own)
    if kit:
        print(
            f"# rows at or above 1x Siddhi: {at1} of {compared} compared; at or above 2x: "
            f"{at2} (of {len(chosen)} workloads)"
        )
    print(f"# load average after: {'/'.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
