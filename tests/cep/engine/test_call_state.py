"""Stateful function calls (`kf:kalmanFilter`) in a partition: each key's copy of a query has
call sites of its own, as Siddhi 3.2 clones each expression executor per key. So a key's
output does not depend on the other keys' events: it equals that key's events run alone."""

import random

import cep
from cep.engine.call_state import fresh_call_state, has_call_state
from cep.engine.runtime import ExecutionPlanRuntime

DEFS = "@Plan:playback\ndefine stream S (k string, v double, r double, t long);\n"
QUERIES = (
    "from S select k, kf:kalmanFilter(v) as e1, kf:kalmanFilter(v, 2.0) as e2, "
    "kf:kalmanFilter(v, r, 0.5, t) as e4 insert into O;\n"
    "from S[kf:kalmanFilter(v) > 50.0] select k, v, -1.0 as e2, 0.0 as e4 "
    "insert into O;\n"
)
PARTITIONED = DEFS + "partition with (k of S) begin\n" + QUERIES + "end;\n"


def events(keys=4, n=60, seed=7):
    rnd = random.Random(seed)
    return [
        (
            1000 + 10 * i,
            (rnd.choice("abcd"[:keys]), rnd.uniform(0, 100), rnd.uniform(0, 2), 1000 + 10 * i),
        )
        for i in range(n)
    ]


def run(plan, evs):
    rt = ExecutionPlanRuntime(cep.compile(plan))
    got = []
    rt.add_callback("O", lambda out: got.extend((t, tuple(r)) for t, r in out))
    h = rt.input_handler("S")
    for ts, row in evs:
        h.send(row, ts)
    rt.shutdown()
    return got


def test_each_key_filters_as_if_alone():
    evs = events()
    got = run(PARTITIONED, evs)
    assert len({r[0] for _, r in got}) == 4
    for key in "abcd":
        mine = [e for e in evs if e[1][0] == key]
        assert [x for x in got if x[1][0] == key] == run(DEFS + QUERIES, mine)


def test_a_clone_gets_its_own_call_sites_shared_by_its_functions():
    rt = ExecutionPlanRuntime(cep.compile(PARTITIONED))
    part = next(p for k, p in rt.ctx.stateful.items() if k.startswith("partition"))
    selectors = [p for _, p, _ in part.recipe.steps if hasattr(p, "code")]
    proto = next(s for s in selectors if has_call_state(s))
    copy = proto.clone()
    before = copy.code.fn.__globals__
    fresh_call_state(copy)
    mine = {k: v for k, v in copy.code.fn.__globals__.items() if getattr(v, "call_state", 0)}
    assert len(mine) == 3 and proto.code.fn.__globals__ is before  # the prototype unchanged
    assert all(v is not before[k] for k, v in mine.items())
    rt.shutdown()
