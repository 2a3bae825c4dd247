"""The generated partitioned-pattern kernel (cep/engine/partition/kernel.py) against the general
state machine: same outputs on random streams, for every shape the kernel takes."""

import random

import pytest

import cep
from cep.engine.partition import kernel as kernel_mod
from cep.engine.partition.kernel import PatternKernel
from cep.engine.runtime import ExecutionPlanRuntime

HEAD = "@Plan:playback\ndefine stream S (sym string, price double, vol int, tag string);\n"
SELECT = "select e1.sym as sym, e1.price as p1, e2.price as p2, e2.vol as v insert into Out;"
SHAPES = [
    "every e1=S -> e2=S[e2.sym == e1.sym and e2.price > e1.price * 1.05] within 50 ms",
    "every e1=S -> e2=S[sym == e1.sym and price >= e1.price] within 30 ms",
    "every e1=S -> e2=S[e1.price > e2.price and e2.vol > e1.vol]",
    "every e1=S[vol > 3] -> e2=S[price <= e1.price - 10.0 and tag == e1.tag] within 40 ms",
    "every e1=S -> e2=S[e2.tag == e1.tag and e2.vol == e1.vol] within 60 ms",
    "every e1=S -> e2=S[e2.vol < e1.vol]",
    "every e1=S -> e2=S[e2.price > e1.price or e2.tag == e1.tag] within 25 ms",
    "every e1=S -> e2=S[e2.price > e1.price * 1.01 and e2.vol != e1.vol] within 40 ms",
    # the arriving event's key and the key it files its own partial under differ
    "every e1=S -> e2=S[e2.vol == e1.vol + 1 and e2.price < e1.price] within 60 ms",
    "every e1=S -> e2=S[e2.tag == e1.sym]",
]


def plan(shape, key="sym"):
    return HEAD + f"partition with ({key} of S) begin from {shape} {SELECT} end;"


def events(seed, n=600):
    """Events of a few keys with nulls, equal prices, out-of-order timestamps, and gaps
    longer than the `within` bounds."""
    rnd = random.Random(seed)
    ts, out = 1000, []
    for _ in range(n):
        ts += rnd.choice([0, 1, 2, 5, 20, 70])
        t = ts - rnd.choice([0] * 9 + [40])  # now and then an event from the past
        price = (
            rnd.choice([None, 100.0, 100.0, 105.0])
            if rnd.random() < 0.15
            else round(rnd.uniform(90, 120), 1)
        )
        vol = None if rnd.random() < 0.05 else rnd.randint(1, 6)
        sym = None if rnd.random() < 0.03 else rnd.choice(["A", "B", "C", "D"])
        tag = rnd.choice(["A", "B", "x", None])
        out.append((t, (sym, price, vol, tag)))
    return out


def run(text, evs, batch, kernel, monkeypatch, snapshot_at=None):
    monkeypatch.setattr(kernel_mod, "ENABLED", kernel)
    rt = ExecutionPlanRuntime(cep.compile(text))
    part = next(p for k, p in rt.ctx.stateful.items() if k.startswith("partition"))
    used = [isinstance(m, PatternKernel) for m in ((part.fast and part.fast.merged) or [])]
    got = []
    rt.add_callback("Out", got.extend)
    h = rt.input_handler("S")
    for i in range(0, len(evs), batch):
        if snapshot_at is not None and i == snapshot_at:
            state = rt.snapshot()
            rt = ExecutionPlanRuntime(cep.compile(text))
            rt.add_callback("Out", got.extend)
            rt.restore(state)
            h = rt.input_handler("S")
        assert h.send_batch(evs[i : i + batch]) == []
    return got, used


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_kernel_matches_general_machine(shape, seed, monkeypatch):
    evs = events(seed)
    for batch in (1, 7, 1000):
        want, used_general = run(plan(shape), evs, batch, False, monkeypatch)
        got, used_kernel = run(plan(shape), evs, batch, True, monkeypatch)
        assert used_kernel == [True] and used_general == [False]
        assert got == want, (shape, seed, batch)
    assert want, "the random stream should complete some matches"


def test_kernel_with_partition_key_other_than_the_equality(monkeypatch):
    shape = "every e1=S -> e2=S[e2.tag == e1.tag and e2.price > e1.price] within 50 ms"
    evs = events(7)
    want, _ = run(plan(shape, key="vol"), evs, 50, False, monkeypatch)
    got, used = run(plan(shape, key="vol"), evs, 50, True, monkeypatch)
    assert used == [True] and got == want and want


def test_kernel_snapshot_restore_continues_the_same(monkeypatch):
    shape = SHAPES[0]
    evs = events(11)
    whole, _ = run(plan(shape), evs, 10, True, monkeypatch)
    split, used = run(plan(shape), evs, 10, True, monkeypatch, snapshot_at=300)
    assert used == [True] and split == whole


def test_kernel_expiry_bounds_memory(monkeypatch):
    """Partials that can never complete are dropped once `within` has passed."""
    monkeypatch.setattr(kernel_mod, "ENABLED", True)
    rt = ExecutionPlanRuntime(
        cep.compile(
            plan("every e1=S -> e2=S[e2.sym == e1.sym and e2.price > e1.price] within 100 ms")
        )
    )
    part = next(p for k, p in rt.ctx.stateful.items() if k.startswith("partition"))
    k = part.fast.merged[0]
    h = rt.input_handler("S")
    # falling prices: nothing ever completes
    h.send_batch([(1000 + i, (f"K{i % 10}", 1000.0 - i, 1, "x")) for i in range(1000)])
    assert k.pending_count() <= 110
    h.send_batch([(5000, ("K0", 1.0, 1, "x"))])
    assert k.pending_count() == 1


def test_other_shapes_keep_the_general_machine(monkeypatch):
    monkeypatch.setattr(kernel_mod, "ENABLED", True)
    for shape in [
        "every e1=S -> e2=S[price > e1.price] -> e3=S[price > e2.price]",
        "e1=S -> e2=S[price > e1.price]",
        "every e1=S -> e2=S[price > e1.price]<2>",
    ]:
        rt = ExecutionPlanRuntime(
            cep.compile(
                HEAD + f"partition with (sym of S) begin from {shape} "
                "select e1.sym as sym insert into Out; end;"
            )
        )
        part = next(p for k, p in rt.ctx.stateful.items() if k.startswith("partition"))
        assert not any(isinstance(m, PatternKernel) for m in (part.fast.merged or [])), shape


@pytest.mark.parametrize(
    "select",
    [
        "select * insert into Out;",
        "select e2.price - e1.price as d, e1.tag as t, 'k' as c insert into Out;",
        "select e1.sym as sym, e2.vol * 2 as v having v > 4 insert into Out;",
        "select e1.price as p, e2.price as q order by q limit 1 insert into Out;",
        "select e1.sym as sym insert all events into Out;",
        "select e1.sym as sym, e2.price as p output first every 3 events insert into Out;",
    ],
)
def test_kernel_selects_match_general_machine(select, monkeypatch):
    text = HEAD + (
        "partition with (sym of S) begin from every e1=S -> e2=S[e2.sym == e1.sym "
        f"and e2.price > e1.price] within 40 ms {select} end;"
    )
    evs = events(5)
    want, _ = run(text, evs, 30, False, monkeypatch)
    got, used = run(text, evs, 30, True, monkeypatch)
    assert got == want and want
    if "output first" not in select:
        assert used == [True]


def test_partition_with_a_query_the_kernel_cannot_take_runs_per_key(monkeypatch):
    """A sequence beside the kernel shape keeps per-key machines for both queries: the kernel
    is then not used and the outputs are the general machine's."""
    text = HEAD + (
        "partition with (sym of S) begin "
        "from every e1=S -> e2=S[e2.sym == e1.sym and e2.price > e1.price] within "
        "40 ms select e1.sym as sym, e2.price as p insert into Out; "
        "from every e1=S, e2=S[price > e1.price] select e1.sym as sym, e2.price as p "
        "insert into Out; end;"
    )
    evs = events(9)
    want, _ = run(text, evs, 25, False, monkeypatch)
    got, used = run(text, evs, 25, True, monkeypatch)
    assert used == [] and got == want and want
