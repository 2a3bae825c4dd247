"""A join side whose other side is a plain stream side runs its window's output through one
loop (JoinProcessor._window_output_plain). Its outputs equal the general path's
(window_output and _probe) for inner and outer joins, with and without an equality key,
sliding and batch windows, expired events (`insert all events`) and a unidirectional join."""

import random

import pytest

from cep.engine.join.processor import JoinProcessor
from tests.cep.engine.helpers import collect, feed, runtime

HEAD = (
    "@Plan:playback\ndefine stream A (sym string, price double, vol int);\n"
    "define stream B (sym string, price double, vol int);\n"
)
JOINS = [
    "from A#window.length(5) join B#window.length(7) on A.sym == B.sym "
    "select A.price as a, B.price as b insert into Out;",
    "from A#window.length(4) left outer join B#window.length(4) on A.sym == B.sym "
    "select A.sym as s, B.vol as v insert into Out;",
    "from A#window.length(3) right outer join B#window.lengthBatch(3) on A.vol > B.vol "
    "select A.vol as a, B.vol as b insert all events into Out;",
    "from A#window.time(50 milliseconds) full outer join B#window.length(6) "
    "on A.sym == B.sym and A.price < B.price select A.price as a, B.price as b "
    "insert all events into Out;",
    "from A unidirectional join B#window.length(10) on A.sym == B.sym "
    "select A.vol as a, B.vol as b insert into Out;",
]


def _events(seed, n=400):
    rnd = random.Random(seed)
    return [
        (
            rnd.choice("AB"),
            1000 + 7 * i,
            (rnd.choice(["x", "y", "z", None]), float(rnd.randrange(10)), rnd.randrange(5)),
        )
        for i in range(n)
    ]


def _run(text, items, batch, plain, monkeypatch):
    with monkeypatch.context() as m:
        if not plain:
            m.setattr(JoinProcessor, "_plain_other", lambda self, which: False)
        rt = runtime(HEAD + text)
        got = collect(rt, ["Out"])
        feed(rt, items, batch)
        rt.shutdown()
    return got["Out"]


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("batch", [1, 32])
@pytest.mark.parametrize("plan", range(len(JOINS)))
def test_the_plain_loop_gives_the_general_paths_outputs(plan, batch, seed, monkeypatch):
    items = _events(seed)
    fast = _run(JOINS[plan], items, batch, True, monkeypatch)
    slow = _run(JOINS[plan], items, batch, False, monkeypatch)
    assert fast == slow
    assert slow
