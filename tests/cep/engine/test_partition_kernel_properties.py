"""The generated partitioned-pattern kernel (cep/engine/partition/kernel.py) against the
general state machine, on hypothesis-drawn streams: keys that appear once, equal prices and
timestamps (ties), `within` bounds passed and timestamps that go back, several e1 before an
e2, NaN and null prices, batches of any size, rows and columnar batches mixed, and a snapshot
restored part-way. Outputs are compared by repr (NaN exactly)."""

import math

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from cep.engine.partition import kernel as kernel_mod
from cep.engine.partition.kernel import PatternKernel
from tests.cep.engine.stock_events import HEAD, feed, recording, timed as _timed

np = pytest.importorskip("numpy")

SHAPES = [
    "every e1=S -> e2=S[e2.sym == e1.sym and e2.price > e1.price * 1.05] within 30 ms "
    "select e1.sym as sym, e1.price as p1, e2.price as p2",
    "every e1=S -> e2=S[sym == e1.sym and price >= e1.price] within 20 ms "
    "select e1.price as p1, e2.price as p2, e2.vol as v",
    "every e1=S -> e2=S[e2.price < e1.price and e2.vol != e1.vol] within 25 ms "
    "select e1.vol as v1, e2.vol as v2",
    "every e1=S -> e2=S[e2.price <= e1.price - 1.0] select e1.price as p1, e2.price as p2",
    "every e1=S[vol > 2] -> e2=S[e2.vol == e1.vol] within 15 ms select e1.sym as s, e2.price as p",
]
PRICES = st.one_of(
    st.none(),
    st.sampled_from([math.nan, math.inf, 100.0, 105.0, 110.25]),
    st.floats(90, 120, allow_nan=False),
)
ROW = st.tuples(
    st.sampled_from(["a", "b", "c"] + [f"once{i}" for i in range(4)] + [None]),
    PRICES,
    st.one_of(st.none(), st.integers(1, 4)),
)
EVENT = st.tuples(st.sampled_from([0, 0, 1, 2, 7, 40, -10, -35]), ROW)
BATCHES = st.lists(
    st.tuples(st.lists(EVENT, min_size=1, max_size=40), st.sampled_from(["rows", "rows", "cols"])),
    min_size=1,
    max_size=10,
)


def _run(text, batches, kernel, monkeypatch, restore_at=None):
    monkeypatch.setattr(kernel_mod, "ENABLED", kernel)
    fresh, got = recording(text)
    rt = fresh()
    part = next(p for k, p in rt.ctx.stateful.items() if k.startswith("partition"))
    used = [isinstance(m, PatternKernel) for m in part.fast.merged]
    feed(rt, fresh, batches, restore_at)
    return got, used


@pytest.mark.parametrize("shape", SHAPES)
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(batches=BATCHES, cut=st.integers(0, 10))
def test_kernel_matches_general_machine(shape, batches, cut, monkeypatch):
    text = HEAD + f"partition with (sym of S) begin from {shape} insert into O; end;"
    timed = _timed(batches)
    want, general = _run(text, timed, False, monkeypatch)
    got, used = _run(text, timed, True, monkeypatch, restore_at=cut)
    assert general == [False] and used == [True]
    assert got == want


def test_nan_thresholds_and_values_complete_nothing(monkeypatch):
    """A NaN threshold or arriving value compares false as in the general machine (a NaN
    partial never reaches a bucket, so bisection over the bucket stays sound)."""
    text = HEAD + (
        "partition with (sym of S) begin from every e1=S -> e2=S[e2.sym == e1.sym "
        "and e2.price >= e1.price] within 100 ms select e1.price as p1, "
        "e2.price as p2 insert into O; end;"
    )
    evs = [
        (1000, ("a", 1.0, 1)),
        (1001, ("a", math.nan, 1)),
        (1002, ("a", 0.5, 1)),
        (1003, ("a", 0.6, 1)),
        (1004, ("a", math.nan, 1)),
        (1005, ("a", 0.9, 1)),
    ]
    timed = [("rows", evs)]
    want, _ = _run(text, timed, False, monkeypatch)
    got, used = _run(text, timed, True, monkeypatch)
    assert used == [True] and got == want
    assert got == [repr((1003, (0.5, 0.6))), repr((1005, (0.6, 0.9)))]


def test_a_partial_dropped_at_a_batch_end_stays_dropped_when_time_goes_back(monkeypatch):
    """`within` drops partials at a batch's end (general machine's rule); a later event from
    the past that would still be within reach of one must not complete it."""
    text = HEAD + (
        "partition with (sym of S) begin from every e1=S -> e2=S[e2.sym == e1.sym "
        "and e2.price > e1.price] within 30 ms select e1.price as p1, "
        "e2.price as p2 insert into O; end;"
    )
    timed = [
        ("rows", [(1000, ("a", 1.0, 1))]),
        ("rows", [(1100, ("b", 1.0, 1))]),
        ("rows", [(1020, ("a", 2.0, 1)), (1021, ("a", 3.0, 1))]),
    ]
    want, _ = _run(text, timed, False, monkeypatch)
    got, used = _run(text, timed, True, monkeypatch)
    assert used == [True] and got == want == [repr((1021, (2.0, 3.0)))]
