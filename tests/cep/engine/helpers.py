"""Helpers for engine tests: compile a plan, feed events in batches, collect outputs."""

import random

import cep
from cep.engine.runtime import ExecutionPlanRuntime


def runtime(text, playback=None):
    return ExecutionPlanRuntime(cep.compile(text), playback=playback)


def collect(rt, streams):
    """Attach callbacks; returns {stream: list of (ts, row)} that fills as events come out."""
    got = {s: [] for s in streams}
    for s in streams:
        rt.add_callback(s, got[s].extend)
    return got


def feed(rt, items, batch=1):
    """items: ("S", ts, row) events and ("clock", ts) steps. Consecutive events of one stream
    go in batches of up to `batch` (a clock step always ends a batch); batch=1 uses send()."""
    pending, stream = [], None

    def flush():
        if pending and batch == 1:  # one at a time goes through send()
            rt.input_handler(stream).send(pending[0][1], pending[0][0])
        elif pending:
            bad = rt.input_handler(stream).send_batch(list(pending))
            assert not bad, bad
        pending.clear()

    for item in items:
        if item[0] == "clock":
            flush()
            rt.advance_time(item[1])
            continue
        s, ts, row = item
        if s != stream or len(pending) >= batch:
            flush()
            stream = s
        pending.append((ts, row))
    flush()


def ticks(n=80, seed=7, syms=("A", "B", "C", "D"), clock_every=9, start=1000):
    """A deterministic event sequence for S(sym string, price double, ets long), with equal
    timestamps, gaps longer than the test windows, and clock steps."""
    rnd = random.Random(seed)
    items, ts = [], start
    for i in range(n):
        ts += rnd.choice((0, 100, 250, 400, 700, 900, 2500))
        items.append(("S", ts, (rnd.choice(syms), float(rnd.randint(1, 40)) / 2, ts + 50)))
        if i % clock_every == clock_every - 1:
            ts += rnd.choice((300, 1500, 4000))
            items.append(("clock", ts))
    return items


def run_plan(text, items, streams, batch=1):
    rt = runtime(text)
    got = collect(rt, streams)
    feed(rt, items, batch)
    rt.shutdown()
    return got
