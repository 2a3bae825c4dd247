"""`timeLength` and `externalTime` fused with their selector (cep/engine/fused.py), and the
sliding kernel over them and over min/max without group by (cep/engine/columnar/sliding.py,
extremes.py), against the unfused window + selector chain: random events with equal
timestamps, equal and out-of-order external times, nulls, signed zeros, NaN, infinities and
repeated values, batches of every size; sent as rows (the fused loop, and forced through the
kernel), as columns, and as both in turn. Every output must be the chain's exactly. With the
Siddhi kit at hand, the same plans against the real Siddhi 3.2.15."""

import random

import numpy as np
import pytest

import cep
from cep.engine import fused
from cep.engine.columnar import adaptive, sliding
from cep.engine.columnar.extremes import range_extremes, suffix_extremes
from tests.cep.engine.columnar.test_batch_windows import HAVE_KIT, NAMES, _cuts, siddhi_outputs

HEAD = "@Plan:playback\ndefine stream S (sym string, price double, vol long, q int, f float);\n"
QUERIES = [
    "from S#window.timeLength(20, 7) select sum(price) as s, count() as c insert into Out;",
    "from S#window.timeLength(5, 100) select sym, avg(price) as a, sum(vol) as sv, "
    "max(price) as mx insert into Out;",
    "from S#window.timeLength(50, 3) select sym, sum(price) as s, count() as c group by sym "
    "insert into Out;",
    "from S#window.externalTime(vol, 30) select max(price) as m insert into Out;",
    "from S#window.externalTime(vol, 8) select sym, min(q) as mq, sum(price) as s, "
    "avg(f) as af, count() as c insert into Out;",
    "from S#window.externalTime(vol, 40) select sym, avg(price) as a group by sym insert into Out;",
    "from S#window.length(6) select sum(price) as s, min(price) as mn, max(price) as mx, "
    "price insert into Out;",
    "from S#window.time(9) select max(f) as mf, min(q) as mq insert into Out;",
    "from S#window.length(5) select sum(price) as s, avg(price) as a, count() as c, "
    "min(price) as mn, max(price) as mx, stddev(price) as sd insert into Out;",
    "from S#window.time(6) select stddev(q) as sq, stddev(f) as sf insert into Out;",
    "from S#window.length(1) select stddev(price) as sd, price insert into Out;",
    "from S#window.externalTime(vol, 5) select stddev(price) as sd insert into Out;",
    # groups that empty (the row loop drops them when their state is exactly the initial)
    "from S#window.length(3) select sym, sum(price) as s, avg(price) as a, count() as c "
    "group by sym insert into Out;",
    "from S#window.time(4) select sym, sum(price) as s, sum(q) as sq group by sym insert into Out;",
]


def _events(seed, n, nasty):
    rnd = random.Random(seed)
    out, ts, ext = [], 1000, 0
    for _ in range(n):
        ts += rnd.choice((0, 0, 1, 3, 12))
        ext += (
            rnd.choice((0, 1, 2, 7, -3)) if nasty and rnd.random() < 0.1 else rnd.choice((0, 1, 2))
        )
        if nasty:
            price = rnd.choice([0.5, -2.5, 0.0, -0.0, float("nan"), float("inf"), None, 1e16])
        else:
            price = rnd.uniform(-1000, 1000)
        out.append(
            (
                ts,
                (
                    rnd.choice("abc"),
                    price,
                    ext,
                    rnd.randint(-(10**9), 10**9) if not nasty else rnd.randint(-2, 3),
                    rnd.uniform(-1e6, 1e6) if not nasty else rnd.choice((0.5, -1.25)),
                ),
            )
        )
    return out


def _run(plan, events, cuts, how):
    rt = cep.ExecutionPlanRuntime(cep.compile(plan), playback=True)
    got = []
    rt.add_callback("Out", got.extend)
    h = rt.input_handler("S")
    for j, (a, b) in enumerate(cuts):
        batch = events[a:b]
        if how == "rows" or (how == "mixed" and j % 2):
            h.send_batch(batch)
        else:
            cols = {n: [r[i] for _, r in batch] for i, n in enumerate(NAMES)}
            h.send_columns(cols, np.array([t for t, _ in batch], np.int64))
    rt.shutdown()
    return got


@pytest.fixture
def taken(monkeypatch):
    count = [0]
    run = sliding.SlidingKernel.run

    def counted(self, *args):
        res = run(self, *args)
        count[0] += res is not None
        return res

    monkeypatch.setattr(sliding.SlidingKernel, "run", counted)
    return count


def _reference(monkeypatch, query, plan, events, cuts):
    """The output without the kernel: the unfused window + selector chain for timeLength
    and externalTime; for length and time (always fused), the fused loop alone."""
    with monkeypatch.context() as mp:
        mp.setattr(adaptive, "FORCE", False)
        if "length(" in query or "time(" in query:
            mp.setattr(sliding, "sliding_plan", lambda c, spec: None)
        else:
            mp.setattr(fused, "FUSABLE", ("length", "time"))
        return repr(_run(plan, events, cuts, "rows"))


@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("nasty", [False, True])
def test_fused_and_kernel_equal_the_chain(query, seed, nasty, monkeypatch, taken):
    plan = HEAD + query
    events = _events(seed, 900, nasty)
    cuts = _cuts(seed, len(events))
    expect = _reference(monkeypatch, query, plan, events, cuts)
    assert expect != "[]"
    monkeypatch.setattr(adaptive, "FORCE", False)
    assert repr(_run(plan, events, cuts, "rows")) == expect, "fused row loop"
    taken[0] = 0
    monkeypatch.setattr(adaptive, "FORCE", True)
    for how in ("rows", "columns", "mixed"):
        assert repr(_run(plan, events, cuts, how)) == expect, how
    if not nasty:  # a group that empties may send a batch to the row loop
        assert taken[0] > (0 if "group by" in query else len(cuts))


def test_range_extremes_and_the_deque():
    rng = np.random.default_rng(3)
    v = rng.permutation(200).astype(np.float64)
    lo = rng.integers(0, 200, 500)
    hi = np.minimum(199, lo + rng.integers(0, 80, 500))
    got = range_extremes(v, lo, hi, "max")
    assert got.tolist() == [v[a : b + 1].max() for a, b in zip(lo, hi)]
    got = range_extremes(v, lo, hi, "min")
    assert got.tolist() == [v[a : b + 1].min() for a, b in zip(lo, hi)]
    assert suffix_extremes(np.array([3.0, 9.0, 4.0, 7.0, 1.0]), "max") == [9.0, 7.0, 1.0]
    assert suffix_extremes(np.array([3.0, 9.0, 4.0, 7.0, 1.0]), "min") == [1.0]


@pytest.mark.slow
@pytest.mark.skipif(
    not HAVE_KIT, reason="the Siddhi 3.2.15 kit (../shared/siddhi-kit) and java are not here"
)
@pytest.mark.parametrize("query", QUERIES)
def test_kernel_equals_siddhi(query, tmp_path, monkeypatch, taken):
    plan = HEAD + query
    events = _events(13, 900, False)
    theirs = siddhi_outputs(plan, events, tmp_path)
    monkeypatch.setattr(adaptive, "FORCE", True)
    ours = _run(plan, events, _cuts(13, len(events)), "columns")
    assert theirs and (taken[0] > 0 or "group by" in query)
    if "max(f)" in query:  # a float: Siddhi prints the float, we carry its double
        theirs = [(t, (float(np.float32(r[0])),) + r[1:]) for t, r in theirs]
    assert ours == theirs
