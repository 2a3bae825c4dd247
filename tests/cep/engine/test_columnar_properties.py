"""The columnar path gives exactly the row path's output: hypothesis draws random batches
(nulls, NaN, infinities, signed zeros, long and int extremes, 32-bit floats, timestamps that
repeat or go back, keys that appear and disappear) and each plan runs twice, once with
`send_batch` and once with `send_columns` (some batches as rows in between, and a snapshot
restored part-way), compared by repr (NaN and -0.0 exactly)."""

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import cep
from cep.engine import javamath
from cep.engine.columnar import sliding

HEAD = "@Plan:playback\ndefine stream S (sym string, price double, vol long, x int, f float);\n"
STATELESS = [
    "from S[price > 10.0 and vol != 3] select sym, price, vol * 2 as v2, x + 1 as x1, "
    "-x as nx insert into O;",
    "from S[not (sym == 'a') or price is null] select * insert into O;",
    "from S[f < 1.5f or x >= 7] select f * f as ff, f + 1.0 as fd, f - 2 as f2, "
    "price * vol as pv insert into O;",
    "from S[sym != 'b'] select sym, x * x as xx, vol + x as vx insert into O;",
]
SLIDING = [
    "from S#window.length({n}) select sum(price) as s, avg(vol) as a, count() as c, "
    "sum(vol) as sv insert into O;",
    "from S#window.length({n}) select sym, sum(x) as sx group by sym insert into O;",
    "from S#window.time({t}) select sym, sum(price) as s, avg(price) as a, count() as c "
    "group by sym insert into O;",
    "from S#window.time({t}) select sym, count() as c group by sym insert into O;",
    "from S#window.time({t}) select sym, x, sum(vol) as v, avg(f) as af group by sym, x "
    "insert into O;",
    "from S#window.time({t}) select price, sum(f) as sf, avg(x) as ax insert into O;",
    "from S select sym, sum(price) as s, count() as c, avg(vol) as a group by sym insert into O;",
    "from S select sum(vol) as v, sum(x) as sx insert into O;",
]

PRICES = st.one_of(
    st.none(),
    st.sampled_from([math.nan, math.inf, -math.inf, -0.0, 0.0, 1e308, 5e-324]),
    st.floats(-1e3, 1e3, allow_nan=False),
)
LONGS = st.one_of(
    st.none(),
    st.sampled_from([javamath.LONG_MAX, javamath.LONG_MIN, 3]),
    st.integers(-10, 10),
    st.integers(javamath.LONG_MIN, javamath.LONG_MAX),
)
INTS = st.one_of(
    st.none(), st.sampled_from([javamath.INT_MAX, javamath.INT_MIN, 7]), st.integers(-10, 10)
)
FLOATS = st.one_of(st.none(), st.floats(-4, 4, width=32), st.sampled_from([math.inf, 1.5]))
ROW = st.tuples(st.sampled_from(["a", "b", "c", "d", None]), PRICES, LONGS, INTS, FLOATS)
EVENT = st.tuples(st.sampled_from([0, 0, 1, 1, 3, 40, 250, -5]), ROW)
BATCHES = st.lists(
    st.tuples(
        st.lists(EVENT, min_size=1, max_size=30),
        st.sampled_from(["cols", "cols", "cols", "numpy", "rows"]),
    ),
    min_size=1,
    max_size=8,
)


def _plan_batches(batches):
    """[(mode, [(ts, row)])] with timestamps from the drawn steps."""
    t, out = 1000, []
    for events, mode in batches:
        evs = []
        for dt, row in events:
            t += dt
            evs.append((t, row))
        out.append((mode, evs))
    return out


def _columns(events, as_numpy):
    cols = list(zip(*[r for _, r in events]))
    names = ("sym", "price", "vol", "x", "f")
    data = {n: list(c) for n, c in zip(names, cols)}
    if as_numpy:  # masked numpy arrays where a column has nulls
        dt = {"price": np.float64, "vol": np.int64, "x": np.int32, "f": np.float32}
        for n, t in dt.items():
            vals = data[n]
            mask = [v is None for v in vals]
            arr = np.array([0 if v is None else v for v in vals], t)
            data[n] = np.ma.MaskedArray(arr, mask) if any(mask) else arr
        sym = np.empty(len(events), object)
        sym[:] = data["sym"]
        data["sym"] = sym
    return data, np.array([t for t, _ in events], np.int64)


def _run(text, plan, columnar, snapshot_at=None):
    rt = cep.ExecutionPlanRuntime(cep.compile(text))
    got = []
    rt.add_callback("O", got.extend)
    for i, (mode, events) in enumerate(plan):
        if i == snapshot_at:
            data = rt.snapshot()
            rt.shutdown()
            rt = cep.ExecutionPlanRuntime(cep.compile(text))
            rt.restore(data)
            rt.add_callback("O", got.extend)
        h = rt.input_handler("S")
        if not columnar or mode == "rows":
            assert h.send_batch(events) == []
        else:
            assert h.send_columns(*_columns(events, mode == "numpy")) == []
    rt.advance_time(10**9)
    rt.shutdown()
    return repr(got)


def _check(text, batches, snap):
    plan = _plan_batches(batches)
    rows = _run(text, plan, False)
    assert _run(text, plan, True) == rows
    assert _run(text, plan, True, snapshot_at=snap % (len(plan) + 1)) == rows


SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("query", STATELESS)
@SETTINGS
@given(batches=BATCHES, snap=st.integers(0, 8))
def test_stateless_columnar_equals_rows(query, batches, snap):
    _check(HEAD + query, batches, snap)


@pytest.mark.parametrize("query", SLIDING)
@SETTINGS
@given(
    batches=BATCHES,
    snap=st.integers(0, 8),
    n=st.sampled_from([1, 2, 5, 40]),
    t=st.sampled_from([1, 10, 100, 1000]),
)
def test_sliding_columnar_equals_rows(query, batches, snap, n, t):
    _check(HEAD + query.format(n=n, t=t), batches, snap)


def test_kernels_are_attached_and_used():
    """The queries above do run their kernels (not the row fallback) on ordered input."""
    calls = []
    orig = sliding.SlidingKernel.run

    def spy(self, *a):
        r = orig(self, *a)
        calls.append(r is not None)
        return r

    sliding.SlidingKernel.run = spy
    try:
        for q in SLIDING:
            text = HEAD + q.format(n=5, t=100)
            rt = cep.ExecutionPlanRuntime(cep.compile(text))
            head = rt.junctions["S"].subscribers[0]
            assert getattr(head, "kernel", None) is not None or "process_columns" in vars(head), q
            rows = [(1000 + i, (("a", "b")[i % 2], float(i), i, i, 1.0)) for i in range(50)]
            calls.clear()
            rt.input_handler("S").send_columns(*_columns(rows, True))
            assert calls == [True], q
    finally:
        sliding.SlidingKernel.run = orig
    for q in STATELESS:
        rt = cep.ExecutionPlanRuntime(cep.compile(HEAD + q))
        assert "process_columns" in vars(rt.junctions["S"].subscribers[0]), q
