"""The batch windows' kernel (cep/engine/columnar/batchwin.py: `lengthBatch`,
`externalTimeBatch` feeding sum/avg/count) against the row loop: random events with equal
timestamps, out-of-order and equal external times, nulls, signed zeros, NaN and infinities,
batches of every size (empty ones too, and flushes inside and across batches), sent as rows
through the kernel, as columns, and as both in turn; every output stream must be the row
loop's exactly (repr: -0.0 and NaN too). With the Siddhi kit at hand, the same plans against
the real Siddhi 3.2.15."""

import json
import os
import random
import shutil
import subprocess

import numpy as np
import pytest

import cep
from cep.engine.columnar import adaptive, batchwin

HEAD = "@Plan:playback\ndefine stream S (sym string, price double, vol long, q int, f float);\n"
QUERIES = [
    "from S#window.lengthBatch(3) select sum(price) as s, count() as c insert into Out;",
    "from S#window.lengthBatch(1) select sym, sum(price) as s, avg(price) as a insert into Out;",
    "from S#window.lengthBatch(50) select sym, avg(q) as aq, sum(vol) as sv, sum(q) as sq, "
    "count() as c, sum(f) as sf, f insert into Out;",
    "from S#window.lengthBatch(7) select sum(price) as s, avg(price) as a, price insert into Out;",
    "from S#window.externalTimeBatch(vol, 10) select count() as c, sym, sum(price) as s "
    "insert into Out;",
    "from S#window.externalTimeBatch(vol, 25, 3) select avg(price) as a, sum(q) as sq, vol "
    "insert into Out;",
    "from S#window.externalTimeBatch(vol, 4) select count() as c, avg(f) as af, sum(q) as sq "
    "insert into Out;",
]
# a downstream query that reads the plan clock while each flush's row goes through it
DOWNSTREAM = "from Out#window.time(5) select count() as n insert into Out2;\n"
NAMES = ["sym", "price", "vol", "q", "f"]


def _events(seed, n, nasty):
    rnd = random.Random(seed)
    prices = [0.1, 0.2, 0.3, 1e16, -1e16, -2.5, 100.125, 1 / 3]
    if nasty:
        prices += [0.0, -0.0, float("nan"), float("inf"), -float("inf"), 1e308, None]
    out, ts, ext = [], 1000, 0
    for _ in range(n):
        ts += rnd.choice((0, 0, 1, 3))
        ext += rnd.choice((0, 1, 2, 7, -3, 30)) if nasty else rnd.choice((0, 1, 2, 7))
        price = rnd.choice(prices)
        if price is not None:
            price *= rnd.choice((1.0, -1.0, 3.0))
        out.append(
            (
                ts,
                (
                    rnd.choice("abc"),
                    price,
                    ext,
                    rnd.randint(-5, 9),
                    rnd.choice((0.5, -1.25, 3.0, 1e30)),
                ),
            )
        )
    return out


def _cuts(seed, n):
    rnd = random.Random(seed * 7 + 1)
    out, i = [], 0
    while i < n:
        size = rnd.choice((0, 1, 2, 5, 49, 50, 51, 120, 700))
        out.append((i, min(n, i + size)))
        i += size
    return out


def _run(plan, events, cuts, how):
    """Every output of `plan`: `how` is 'rows' (forced through the kernel), 'columns',
    'mixed' (batches alternately as rows and columns) or 'loop' (the row loop alone)."""
    rt = cep.ExecutionPlanRuntime(cep.compile(plan), playback=True)
    got = {}
    for sid in ("Out", "Out2"):
        if sid in rt.junctions:
            rt.add_callback(sid, lambda evs, sid=sid: got.setdefault(sid, []).extend(evs))
    h = rt.input_handler("S")
    for j, (a, b) in enumerate(cuts):
        batch = events[a:b]
        if how in ("rows", "loop") or (how == "mixed" and j % 2):
            h.send_batch(batch)
        else:
            cols = {n: [r[i] for _, r in batch] for i, n in enumerate(NAMES)}
            h.send_columns(cols, np.array([t for t, _ in batch], np.int64))
    rt.shutdown()
    return {k: repr(v) for k, v in got.items()}


@pytest.fixture
def taken(monkeypatch):
    """How many batches the kernel took (its decline hands them to the row loop)."""
    count = [0]
    run = batchwin.BatchKernel._run

    def counted(self, *args):
        ok = run(self, *args)
        count[0] += ok
        return ok

    monkeypatch.setattr(batchwin.BatchKernel, "_run", counted)
    return count


@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("nasty", [False, True])
def test_kernel_equals_the_row_loop(query, seed, nasty, monkeypatch, taken):
    plan = HEAD + query + "\n" + DOWNSTREAM
    events = _events(seed, 800, nasty)
    cuts = _cuts(seed, len(events))
    monkeypatch.setattr(adaptive, "FORCE", False)
    expect = _run(plan, events, cuts, "loop")
    assert taken[0] == 0 and expect.get("Out")
    monkeypatch.setattr(adaptive, "FORCE", True)
    for how in ("rows", "columns", "mixed"):
        assert _run(plan, events, cuts, how) == expect, how
    if not nasty:  # clean data: the kernel takes the batches
        assert taken[0] > len(cuts)


@pytest.mark.parametrize("query", QUERIES[:2] + QUERIES[4:5])
def test_kernel_equals_the_row_loop_when_only_callbacks_read(query, monkeypatch, taken):
    """Without a downstream query the flushes' rows go on together: same rows."""
    plan = HEAD + query
    events = _events(5, 3000, False)
    cuts = _cuts(5, len(events))
    monkeypatch.setattr(adaptive, "FORCE", False)
    expect = _run(plan, events, cuts, "loop")
    monkeypatch.setattr(adaptive, "FORCE", True)
    for how in ("rows", "columns", "mixed"):
        assert _run(plan, events, cuts, how) == expect, how
    assert taken[0] > len(cuts)


def test_a_snapshot_taken_while_the_kernel_holds_the_window_restores_it(monkeypatch, taken):
    plan = HEAD + QUERIES[2]
    events = _events(9, 400, False)
    monkeypatch.setattr(adaptive, "FORCE", True)

    def feed(rt, part, columns):
        cols = {n: [r[i] for _, r in part] for i, n in enumerate(NAMES)}
        if columns:
            rt.input_handler("S").send_columns(cols, np.array([t for t, _ in part], np.int64))
        else:
            rt.input_handler("S").send_batch(part)

    whole = cep.ExecutionPlanRuntime(cep.compile(plan), playback=True)
    expect = []
    whole.add_callback("Out", expect.extend)
    feed(whole, events, True)
    first = cep.ExecutionPlanRuntime(cep.compile(plan), playback=True)
    got = []
    first.add_callback("Out", got.extend)
    taken[0] = 0
    feed(first, events[:130], True)  # 2 flushes of 50, 30 events pending
    assert taken[0] == 1
    snap = first.snapshot()
    second = cep.ExecutionPlanRuntime(cep.compile(plan), playback=True)
    second.add_callback("Out", got.extend)
    second.restore(snap)
    feed(second, events[130:], False)
    assert repr(got) == repr(expect)
    for rt in (whole, first, second):
        rt.shutdown()


# -- against the real Siddhi ---------------------------------------------------------------
KIT = os.environ.get("SIDDHI_KIT") or os.path.join(
    os.path.dirname(__file__), "..", "..", "..", "..", "..", "shared", "siddhi-kit"
)
RUN = os.path.join(KIT, "siddhi-run")
HAVE_KIT = os.path.exists(RUN) and shutil.which("java") is not None


def siddhi_outputs(plan, events, folder):
    """The real Siddhi's `Out` events `[(timestamp, row)]` for `events` of stream S (siddhi-run)."""
    (folder / "p.siddhiql").write_text(plan)
    lines = [json.dumps({"stream": "S", "timestamp": t, "data": list(r)}) for t, r in events]
    (folder / "e.jsonl").write_text("\n".join(lines) + "\n")
    done = subprocess.run(
        [RUN, str(folder / "p.siddhiql"), str(folder / "e.jsonl")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-500:]
    return [
        (e["timestamp"], tuple(e["data"]))
        for e in map(json.loads, filter(lambda x: x.startswith("{"), done.stdout.splitlines()))
        if e["stream"] == "Out"
    ]


@pytest.mark.slow
@pytest.mark.skipif(
    not HAVE_KIT, reason="the Siddhi 3.2.15 kit (../shared/siddhi-kit) and java are not here"
)
@pytest.mark.parametrize("query", QUERIES)
def test_kernel_equals_siddhi(query, tmp_path, monkeypatch, taken):
    plan = HEAD + query
    events = _events(11, 1200, False)
    theirs = siddhi_outputs(plan, events, tmp_path)
    monkeypatch.setattr(adaptive, "FORCE", True)
    rt = cep.ExecutionPlanRuntime(cep.compile(plan), playback=True)
    ours = []
    rt.add_callback("Out", ours.extend)
    for a, b in _cuts(11, len(events)):
        part = events[a:b]
        cols = {n: [r[i] for _, r in part] for i, n in enumerate(NAMES)}
        rt.input_handler("S").send_columns(cols, np.array([t for t, _ in part], np.int64))
    rt.shutdown()
    assert taken[0] > 0 and theirs
    if ", f insert" in query:  # a float attribute: Siddhi prints the float, we carry its double
        theirs = [(t, r[:-1] + (float(np.float32(r[-1])),)) for t, r in theirs]
    assert ours == theirs
