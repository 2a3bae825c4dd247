"""A stream-table join on the table's @IndexBy key with a stateless select runs as one
comprehension (lookup and projection fused); its output is the one of the lookup followed by
the selector (differential against the unfused chain)."""

import random

import pytest

import cep
from cep.engine.join import builder
from cep.engine.runtime import ExecutionPlanRuntime

HEAD = """@Plan:playback
define stream Put (k int, v double, s string);
define stream Ask (k int, w double);
@IndexBy('k') define table T (k int, v double, s string);
from Put insert into T;
"""
QUERIES = [
    "from Ask join T on Ask.k == T.k select Ask.k as k, T.v as v insert into Out;",
    "from Ask join T on T.k == Ask.k and T.v > Ask.w select T.s as s, Ask.w * T.v as x "
    "insert into Out;",
    "from Ask join T on Ask.k == T.k select Ask.k as k, T.v + Ask.w as x having x > 3.0 "
    "insert into Out;",
    "from T join Ask on T.k == Ask.k select * insert into Out;",
    "from Ask[w > 0.5] join T on Ask.k == T.k select T.s as s insert all events into Out;",
    "from Ask join T on Ask.k == T.k select T.s as s insert expired events into Out;",
    "partition with (k of Ask) begin from Ask join T on Ask.k == T.k "
    "select Ask.k as k, T.v as v insert into Out; end;",
    "from Ask left outer join T on Ask.k == T.k select Ask.k as k, T.v as v insert into Out;",
]


def run(text, items):
    rt = ExecutionPlanRuntime(cep.compile(text))
    got = []
    rt.add_callback("Out", got.extend)
    for stream, batch in items:
        assert not rt.input_handler(stream).send_batch(batch)
    rt.shutdown()
    return got, rt


def workload(seed):
    rnd = random.Random(seed)
    items, ts = [], 1000
    for _ in range(40):
        ts += 1
        stream = rnd.choice(("Put", "Ask", "Ask"))
        n = rnd.randint(1, 9)
        if stream == "Put":
            rows = [
                (
                    rnd.randint(0, 12),
                    rnd.choice((None, rnd.uniform(0, 5))),
                    rnd.choice(("x", "y", None)),
                )
                for _ in range(n)
            ]
        else:
            rows = [(rnd.choice((None, rnd.randint(0, 12))), rnd.uniform(0, 3)) for _ in range(n)]
        items.append((stream, [(ts, r) for r in rows]))
    return items


@pytest.mark.parametrize("query", QUERIES)
def test_fused_lookup_equals_lookup_then_select(query, monkeypatch):
    for seed in range(4):
        items = workload(seed)
        fused, rt = run(HEAD + query, items)
        with monkeypatch.context() as m:
            m.setattr(builder, "_selected", lambda *a: lambda head, prologue: None)
            plain, rt2 = run(HEAD + query, items)
        assert fused == plain
    if "outer" not in query and "expired" not in query:
        assert fused  # the workload produced output


def test_plain_indexed_join_is_fused():
    _, rt = run(HEAD + QUERIES[1], [])
    (proc,) = [p for p in rt.ctx.stateful.values() if type(p).__name__ == "JoinProcessor"]
    assert proc.selected == [True, False]
