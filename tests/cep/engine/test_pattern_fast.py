"""A pattern outside a partition of the kernel's shape runs on the partition kernel
(cep/engine/pattern/fast.py) and, for columnar batches, its columnar form: both against the
general state machine on hypothesis-drawn streams (equality keys, ties, NaN and null
values and keys, `within` passed and time going back, rows and columns mixed, batches up to
1,000 events, a snapshot restored part-way)."""

import gc
import math

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import cep
from cep.engine.partition import kernel as kernel_mod
from cep.engine.pattern.fast import KernelPattern
from tests.cep.engine.stock_events import HEAD, feed, recording, timed as _timed

np = pytest.importorskip("numpy")

SHAPES = [
    (
        "every e1=S -> e2=S[e2.sym == e1.sym and e2.price > e1.price * 1.05] within 30 ms "
        "select e1.sym as sym, e1.price as p1, e2.price as p2",
        True,
    ),
    (
        "every e1=S -> e2=S[sym == e1.sym and price >= e1.price] within 20 ms "
        "select e1.price as p1, e2.price as p2, e2.vol as v",
        True,
    ),
    (
        "every e1=S[vol > 2] -> e2=S[e2.vol == e1.vol and e2.price < e1.price] within 15 ms "
        "select e1.sym as s, e2.price as p",
        True,
    ),
    (
        "every e1=S -> e2=S[e2.sym == e1.sym and e2.price > e1.price] "
        "select e2.price - e1.price as d",
        False,
    ),  # reads both sides: rows only
]
PRICES = st.one_of(
    st.none(),
    st.sampled_from([math.nan, math.inf, 100.0, 105.0]),
    st.floats(90, 120, allow_nan=False),
)
ROW = st.tuples(
    st.sampled_from(["a", "b", "c", "once1", "once2", None]),
    PRICES,
    st.one_of(st.none(), st.integers(1, 4)),
)
EVENT = st.tuples(st.sampled_from([0, 0, 1, 2, 7, 40, -10, -35]), ROW)
BATCH = st.one_of(
    st.lists(EVENT, min_size=1, max_size=30), st.lists(EVENT, min_size=520, max_size=800)
)
BATCHES = st.lists(st.tuples(BATCH, st.sampled_from(["rows", "cols"])), min_size=1, max_size=6)


def _run(text, batches, kernel, monkeypatch, restore_at=None):
    monkeypatch.setattr(kernel_mod, "ENABLED", kernel)
    fresh, got = recording(text)
    rt = fresh()
    procs = [p for p in rt.ctx.stateful.values() if isinstance(p, KernelPattern)]
    feed(rt, fresh, batches, restore_at)
    return got, procs


@pytest.mark.parametrize("shape,columnar", SHAPES)
@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.data_too_large,
        HealthCheck.too_slow,
    ],
)
@given(batches=BATCHES, cut=st.integers(0, 6))
def test_kernel_pattern_matches_the_general_machine(shape, columnar, batches, cut, monkeypatch):
    text = HEAD + f"from {shape} insert into O;"
    timed = _timed(batches)
    want, general = _run(text, timed, False, monkeypatch)
    got, procs = _run(text, timed, True, monkeypatch, restore_at=cut)
    assert general == [] and len(procs) == 1
    assert (procs[0].kernel.vector is not None) == columnar
    assert got == want


def test_other_shapes_and_partition_instances_keep_the_general_machine():
    for text in (
        "from every e1=S -> e2=S[e2.price > e1.price] -> e3=S select e1.price as a insert into O;",
        "from e1=S -> e2=S[e2.price > e1.price] select e1.price as a insert into O;",
        # no equality key: the general machine's unkeyed range index
        "from every e1=S -> e2=S[price >= e1.price] within 20 ms select e1.price "
        "as a insert into O;",
        "partition with (sym of S) begin from every e1=S -> e2=S[e2.price > "
        "e1.price] select e1.price as a insert into #T; from #T select a insert "
        "into O; end;",
    ):
        rt = cep.ExecutionPlanRuntime(cep.compile(HEAD + text))
        rt.input_handler("S").send_batch([(1000, ("a", 1.0, 1)), (1001, ("a", 2.0, 1))])
        gc.collect()
        assert not any(isinstance(o, KernelPattern) for o in gc.get_objects())
        rt.shutdown()
