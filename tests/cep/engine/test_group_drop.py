"""Windowed `group by` forgets a group once the window holds none of its events: memory stays
bounded under ever-new keys, and the output is the one of keeping every group (differential
against the engine with dropping turned off)."""

import random

import pytest

from cep.engine import query_builder
from cep.engine.fused import FusedWindowSelector
from cep.engine.selector import QuerySelector
from tests.cep.engine.helpers import collect, feed, run_plan, runtime

AGGS = (
    "sum(price) as s, avg(price) as a, count() as c, min(price) as lo, "
    "max(price) as hi, stddev(price) as sd, distinctcount(v) as dc"
)


def plan(window, select, kind="all", tail=""):
    return f"""@Plan:playback
    define stream S (sym string, price double, v int);
    from S#window.{window} select sym, {select} group by sym{tail}
    insert {kind} events into O;"""


def selector_state(rt):
    (sel,) = [
        p for p in rt.ctx.stateful.values() if isinstance(p, (QuerySelector, FusedWindowSelector))
    ]
    return sel.state


def fresh_keys(n, step=10):
    return [("S", 1000 + i * step, (f"k{i}", float(i % 7), i % 3)) for i in range(n)]


@pytest.mark.parametrize(
    "window",
    [
        "length(50)",
        "time(1 sec)",
        "externalTime(v, 1 sec)",
        "timeLength(1 sec, 50)",
        "sort(50, price)",
        "unique(sym)",
    ],
)
@pytest.mark.parametrize("tail", ["", " order by s"])  # fused and plain selector
def test_group_entries_bounded_with_new_keys(window, tail):
    if window == "unique(sym)":  # unique per key keeps each key: use a key the window evicts
        window = "unique(v)"
    if window.startswith("externalTime"):
        items = [("S", ts, (row[0], row[1], ts)) for _, ts, row in fresh_keys(5000)]
        text = plan(window, AGGS, tail=tail).replace("v int", "v long")
    else:
        items, text = fresh_keys(5000), plan(window, AGGS, tail=tail)
    rt = runtime(text)
    got = collect(rt, ["O"])
    feed(rt, items, batch=37)
    assert len(got["O"]) > 5000  # current and expired rows came out
    assert len(selector_state(rt)) <= 101


def test_count_only_group_state_dropped():
    rt = runtime(plan("length(3)", "count() as c"))
    feed(rt, fresh_keys(1000), batch=10)
    assert len(selector_state(rt)) == 3


@pytest.mark.parametrize(
    "select", ["maxForever(price) as m", "sum(price) as s, minForever(price) as m"]
)
def test_forever_aggregates_keep_their_group(select):
    rt = runtime(plan("length(1)", select, kind="current"))
    got = collect(rt, ["O"])
    feed(rt, [("S", 1000, ("a", 9.0, 0)), ("S", 1001, ("b", 5.0, 0)), ("S", 1002, ("a", 7.0, 0))])
    assert len(selector_state(rt)) == 2
    assert got["O"][-1][1][-1] == (9.0 if "max" in select else 7.0)


def random_items(seed, n=600, integral=True):
    rnd = random.Random(seed)
    items, ts = [], 1000
    for i in range(n):
        ts += rnd.choice((0, 1, 50, 300, 900, 1500))
        price = float(rnd.randint(-20, 40)) if integral else rnd.uniform(-20, 40)
        v = rnd.choice((None, 1, 2, 3)) if i % 5 else ts
        items.append(("S", ts, (rnd.choice("ABCDEFGH"), price, v)))
        if rnd.random() < 0.05:
            ts += rnd.choice((500, 2500))
            items.append(("clock", ts))
    return items


def keep_all_groups(monkeypatch):
    monkeypatch.setattr(query_builder, "_expires_arrivals", lambda *a: False)


WINDOWS = [
    "length(5)",
    "time(1 sec)",
    "timeLength(1 sec, 4)",
    "sort(4, price, 'desc')",
    "unique(v)",
]


@pytest.mark.parametrize("window", WINDOWS)
@pytest.mark.parametrize("tail", ["", " having c > 1", " order by s"])
@pytest.mark.parametrize("kind", ["current", "all"])
def test_outputs_equal_keeping_every_group(window, tail, kind, monkeypatch):
    text = plan(window, AGGS, kind, tail)
    for seed in range(3):
        items = random_items(seed)
        dropping = run_plan(text, items, ["O"], batch=7)
        with monkeypatch.context() as m:
            keep_all_groups(m)
            kept = run_plan(text, items, ["O"], batch=7)
        assert dropping["O"] and dropping == kept


def test_float_sums_keep_their_rounding_residue_as_siddhi(monkeypatch):
    """A group that empties while its floating sums hold a rounding residue (a + b - a - b is
    not 0.0) keeps its state, as Siddhi 3.2 keeps every group's aggregator: the outputs are
    those of keeping every group, bit for bit. (These events do leave residues: forgetting
    such groups, as the engine once did, gave different sums here.)"""
    text = plan("length(3)", AGGS)
    items = random_items(11, integral=False)
    dropping = run_plan(text, items, ["O"], batch=5)["O"]
    keep_all_groups(monkeypatch)
    kept = run_plan(text, items, ["O"], batch=5)["O"]
    assert dropping and dropping == kept


def test_dropping_disabled_for_windows_without_the_guarantee():
    rt = runtime(plan("frequent(5)", "sum(price) as s"))
    feed(rt, fresh_keys(300))
    assert len(selector_state(rt)) == 300
