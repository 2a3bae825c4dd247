"""A sequence of plain states over one stream runs as one generated loop
(cep/engine/pattern/linear.py). Its outputs equal the general state machine's (the same
plan with the loop turned off), for 2 to 5 states, with and without `every`, conditions over
earlier states, nulls that take the conditions' null-safe form, batches of 1 and 64, inside a
partition, and across a snapshot taken by one and restored into the other."""

import random

import pytest

import cep.engine.pattern.machine as machine
from tests.cep.engine.helpers import collect, feed, runtime

HEAD = "@Plan:playback\ndefine stream S (sym string, price double, vol int);\n"
SEQUENCES = [
    "from every e1=S, e2=S[price > e1.price] select e1.price as a, e2.price as b insert into Out;",
    "from e1=S[vol > 3], e2=S[price > e1.price], e3=S[price > e2.price] "
    "select e1.price as a, e3.price as c insert into Out;",
    "from every e1=S[sym == 'A'], e2=S[sym != e1.sym and vol >= e1.vol], e3=S, "
    "e4=S[price < e1.price] select e1.vol as v, e2.sym as s, e4.price as p insert into Out;",
    "from every e1=S, e2=S[price >= e1.price], e3=S[price >= e2.price], "
    "e4=S[price >= e3.price], e5=S[price >= e4.price] select e1.price as a, e5.price as e "
    "insert into Out;",
    "from every e1=S, e2=S[e1.sym is null or vol > e1.vol] select e1.sym as s, e2.vol as v "
    "insert into Out;",
    # a null price makes the fast form fail: the null-safe form gives `not false`
    "from every e1=S, e2=S[not (price > e1.price)] select e1.price as a, e2.price as b "
    "insert into Out;",
    "partition with (sym of S) begin from every e1=S, e2=S[price > e1.price], "
    "e3=S[vol != e2.vol] select e1.sym as s, e3.price as p insert into Out; end;",
]


def _events(seed, n=500):
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        sym = rnd.choice(["A", "B", "C", None])
        price = (
            rnd.choice([None] + [float(x) for x in range(8)])
            if rnd.random() < 0.1
            else float(rnd.randrange(8))
        )
        out.append(("S", 1000 + 10 * i, (sym, price, rnd.randrange(6))))
    return out


def _run(text, items, batch, linear, monkeypatch):
    with monkeypatch.context() as m:
        if not linear:
            m.setattr(machine, "build_linear", lambda shared: None)
        rt = runtime(HEAD + text)
    got = collect(rt, ["Out"])
    feed(rt, items, batch)
    rt.shutdown()
    return got["Out"]


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("batch", [1, 64])
@pytest.mark.parametrize("plan", range(len(SEQUENCES)))
def test_the_loop_gives_the_state_machines_outputs(plan, batch, seed, monkeypatch):
    items = _events(seed)
    fast = _run(SEQUENCES[plan], items, batch, True, monkeypatch)
    slow = _run(SEQUENCES[plan], items, batch, False, monkeypatch)
    assert fast == slow
    assert slow  # the events make matches


def test_the_loop_is_used_for_these_shapes_and_not_for_others():
    def linear(text):
        rt = runtime(HEAD + text)
        shareds = _shared_machines(rt)
        rt.shutdown()
        return [s.linear_run is not None for s in shareds]

    assert linear(SEQUENCES[0]) == [True]
    assert linear(SEQUENCES[3]) == [True]
    # a pattern, a count state and `within` keep the general machine
    assert linear(
        "from every e1=S -> e2=S[price > e1.price] select e1.price as a insert into Out;"
    ) == [False]
    assert linear("from every e1=S, e2=S<2> select e1.price as a insert into Out;") == [False]
    assert linear("from every e1=S, e2=S within 1 sec select e1.price as a insert into Out;") == [
        False
    ]


def _shared_machines(rt):
    from cep.engine.pattern.machine import SharedMachine

    found, seen, todo = [], set(), [rt]
    while todo:
        obj = todo.pop()
        if id(obj) in seen or isinstance(obj, (str, bytes, int, float)):
            continue
        seen.add(id(obj))
        if isinstance(obj, SharedMachine):
            found.append(obj)
            continue
        if isinstance(obj, dict):
            todo.extend(obj.values())
        elif isinstance(obj, (list, tuple, set)):
            todo.extend(obj)
        elif hasattr(obj, "__dict__") and type(obj).__module__.startswith("cep."):
            todo.extend(vars(obj).values())
    return found


@pytest.mark.parametrize("first_linear", [True, False])
def test_a_snapshot_of_one_restores_into_the_other(first_linear, monkeypatch):
    items = _events(9, 400)
    text = SEQUENCES[1]
    whole = _run(text, items, 16, True, monkeypatch)
    with monkeypatch.context() as m:
        if not first_linear:
            m.setattr(machine, "build_linear", lambda shared: None)
        a = runtime(HEAD + text)
    got_a = collect(a, ["Out"])
    feed(a, items[:157], 16)
    snap = a.snapshot()
    a.shutdown()
    with monkeypatch.context() as m:
        if first_linear:
            m.setattr(machine, "build_linear", lambda shared: None)
        b = runtime(HEAD + text)
    b.restore(snap)
    got_b = collect(b, ["Out"])
    feed(b, items[157:], 16)
    b.shutdown()
    assert got_a["Out"] + got_b["Out"] == whole and whole
