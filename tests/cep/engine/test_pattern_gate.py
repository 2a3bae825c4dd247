"""A pattern's gate (cep/engine/pattern/gate.py) hands the state machine only the events some
state could take. The outputs equal the machine's without the gate, for plain and logical
states, `within`, two streams, a partition, nulls (the conjuncts' null-safe form), batches of
1 and 64; and a stream gets no gate where a state has no own-event conjunct or a conjunct
calls a function."""

import random

import pytest

import cep.engine.pattern.machine as machine
from tests.cep.engine.helpers import collect, feed, runtime
from tests.cep.engine.test_pattern_linear import _shared_machines

HEAD = (
    "@Plan:playback\ndefine stream S (sym string, price double, vol int);\n"
    "define stream T (sym string, level int);\n"
)
PATTERNS = [
    "from every e1=S[price > 6.0] -> e2=S[price < 2.0] and e3=S[vol > 4] within 200 milliseconds "
    "select e1.price as p1, e2.price as p2, e3.vol as v3 insert into Out;",
    "from every e1=S[price > 5.0] -> e2=S[price > e1.price and vol < 3] "
    "select e1.price as a, e2.price as b insert into Out;",
    "from e1=S[vol == 5] -> e2=T[level > 2] or e3=S[price < 1.0] "
    "select e1.vol as v, e2.level as l, e3.price as p insert into Out;",
    "from every e1=T[level == 0] -> e2=S[sym == e1.sym and price >= 3.0] -> "
    "e3=T[level > 3] within 300 milliseconds select e1.sym as s, e2.price as p, e3.level as l "
    "insert into Out;",
    "from every e1=S[not (price > 5.0)] -> e2=S[vol > 4 and sym is null] "
    "select e1.price as a, e2.vol as b insert into Out;",
    "partition with (sym of S) begin from every e1=S[price > 6.0] -> "
    "e2=S[price < e1.price and vol > 3] within 500 milliseconds select e1.sym as s, e2.price as p "
    "insert into Out; end;",
]


def _events(seed, n=600):
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        ts = 1000 + 10 * i
        if rnd.random() < 0.3:
            out.append(("T", ts, (rnd.choice(["A", "B", None]), rnd.randrange(6))))
            continue
        price = None if rnd.random() < 0.08 else float(rnd.randrange(9))
        out.append(("S", ts, (rnd.choice(["A", "B", None]), price, rnd.randrange(7))))
    return out


def _run(text, items, batch, gated, monkeypatch):
    with monkeypatch.context() as m:
        if not gated:
            m.setattr(machine, "build_gates", lambda shared: {})
        rt = runtime(HEAD + text)
    got = collect(rt, ["Out"])
    feed(rt, items, batch)
    shareds = _shared_machines(rt)
    rt.shutdown()
    return got["Out"], shareds


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("batch", [1, 64])
@pytest.mark.parametrize("plan", range(len(PATTERNS)))
def test_the_gate_keeps_the_machines_outputs(plan, batch, seed, monkeypatch):
    items = _events(seed)
    gated, shareds = _run(PATTERNS[plan], items, batch, True, monkeypatch)
    plain, _ = _run(PATTERNS[plan], items, batch, False, monkeypatch)
    assert gated == plain
    assert plain  # the events make matches
    assert any(s.gates for s in shareds)  # the plan has a gated stream


def test_streams_without_a_test_on_the_event_alone_have_no_gate(monkeypatch):
    def gated(text):
        _, shareds = _run(text, [], 1, True, monkeypatch)
        return sorted(sid for s in shareds for sid in s.gates)

    assert gated(PATTERNS[0]) == ["S"]
    assert gated(PATTERNS[3]) == ["S", "T"]
    # e2 tests only e1's values: every S event may matter
    assert (
        gated(
            "from every e1=S[price > 5.0] -> e2=S[price > e1.price] select e1.price "
            "as a insert into Out;"
        )
        == []
    )
    # a function may read the clock: not a gate
    assert gated(
        "from every e1=S[price > 5.0] -> e2=S[vol > 3 and "
        "str:length(sym) > 0] select e1.price as a insert into Out;"
    ) == ["S"]
    assert (
        gated(
            "from every e1=S[str:length(sym) > 0] -> e2=S[vol > 3] select e1.price "
            "as a insert into Out;"
        )
        == []
    )
    # sequences and counting states keep every event
    assert (
        gated("from every e1=S[price > 5.0], e2=S[vol > 3] select e1.price as a insert into Out;")
        == []
    )
    assert (
        gated(
            "from every e1=S[price > 5.0] -> e2=S[vol > 3]<2> select e1.price as a insert into Out;"
        )
        == []
    )
