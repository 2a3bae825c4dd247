"""Mangled plans are rejected with a positioned SiddhiQLError, never another exception."""

import random

import pytest

import cep
from cep.errors import SiddhiQLError

PLANS = [
    "@Plan:name('P')\ndefine stream S (sym string, price double, vol long);\n"
    "@info(name='q') from S[price > 10.0]#window.time(1 min) select sym, avg(price) as a "
    "group by sym having a > 1.0 output last every 5 events insert into O;",
    "define stream A (id int, sym string, price double);\ndefine table T (sym string, p double);\n"
    "from every e1=A -> e2=A[sym == e1.sym and price > e1.price]<1:3> within 10 sec "
    "select e1.id as a, e2[last].price as p insert into O;\n"
    "from A#window.length(3) as x join T on x.sym == T.sym select x.id as i, T.p as p "
    "insert into O2;\n"
    "from A select sym, price as p update T on T.sym == sym;",
    "define stream S (k string, v double);\n"
    "partition with (k of S) begin from S select k, v insert into #M; "
    "from #M#window.lengthBatch(2) select k, sum(v) as s insert into O; end;\n"
    "from every e1=S, e2=S[v > e1.v]+, e3=S[v < e2[last].v] select e1.k as k insert into P;",
]
PIECES = [
    "(",
    ")",
    "[",
    "]",
    ",",
    ";",
    "->",
    "#",
    "@",
    "every",
    "within",
    "as",
    "'x'",
    "1",
    "1.5",
    "e1",
    "=",
    "<",
    ">",
    ":",
    "*",
    "+",
    "?",
    "not",
    "and",
    "in",
    "select",
    "from",
    "insert into",
    "`",
    '"',
    "partition",
    "begin",
    "end",
    "#window.",
    "is null",
    "last",
]


def mangle(rng, text):
    for _ in range(rng.randint(1, 3)):
        pos = rng.randrange(len(text) + 1)
        if rng.random() < 0.5:
            text = text[:pos] + " " + rng.choice(PIECES) + " " + text[pos:]
        else:
            text = text[:pos] + text[pos + rng.randint(1, 6) :]
    return text


def test_sample_plans_compile():
    for plan in PLANS:
        cep.compile(plan)


@pytest.mark.parametrize("seed", range(4))
def test_mangled_plans_fail_cleanly_with_positions(seed):
    rng = random.Random(seed)
    rejected = 0
    for _ in range(150):
        text = mangle(rng, rng.choice(PLANS))
        try:
            cep.compile(text)
        except SiddhiQLError as exc:
            rejected += 1
            assert exc.span is not None and exc.span.line >= 1, exc.message
            assert 1 <= exc.span.line <= text.count("\n") + 1
            assert exc.message and str(exc)
    assert rejected > 50  # most mangled plans are wrong: the test really exercises errors


def test_absurdly_deep_expression_is_a_clear_error():
    deep = " + ".join(["a"] * 3000)
    with pytest.raises(SiddhiQLError) as info:
        cep.compile(f"define stream S (a int);\nfrom S select {deep} as x insert into O;")
    assert "too deeply" in info.value.message and info.value.span.line == 1
