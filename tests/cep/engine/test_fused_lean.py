"""The lean length-window loop (cep.engine.fused._lean_length: events paired with the one they
push out by `zip`, no pops, no clock) against the plain fused loop, on random batches of
random sizes with nulls and edge values (infinities, NaN, signed zeros, extremes)."""

import math
import random

import pytest

import cep
from cep.engine import fused

SELECTS = [
    "select sum(price) as s",
    "select sum(price) as s, count() as c, sum(vol) as v, avg(price) as a",
    "select sym, sum(price) as s, min(price) as lo, max(vol) as hi, stddev(price) as sd, "
    "distinctcount(sym) as dc",
    "select sym, sum(vol) as v, count() as c group by sym",
]
EDGE = [None, math.inf, -math.inf, math.nan, -0.0, 0.0, 1.7976931348623157e308, 5e-324, 1e16]
LONG_EDGE = [None, 9223372036854775807, -9223372036854775808, 0, 1]


def events(seed, n=600):
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        price = rnd.choice(EDGE) if rnd.random() < 0.15 else rnd.uniform(-1e3, 1e3)
        vol = rnd.choice(LONG_EDGE) if rnd.random() < 0.15 else rnd.randint(-(10**6), 10**6)
        sym = rnd.choice(["a", "b", "c", None])
        out.append((1000 + i + rnd.choice([0, 0, 0, -3]), (sym, price, vol)))
    return out


def run(select, n, seed, lean):
    fused.LEAN = lean
    try:
        rt = cep.ExecutionPlanRuntime(
            cep.compile(
                "@Plan:playback\ndefine stream S (sym string, price double, vol long);\n"
                f"from S#window.length({n}) {select} insert into O;"
            )
        )
    finally:
        fused.LEAN = True
    sources = [
        p.code.fn.source
        for p in rt.ctx.stateful.values()
        if isinstance(p, fused.FusedWindowSelector)
    ]
    assert len(sources) == 1 and ("_chain(" in sources[0]) == lean
    got = []
    rt.add_callback("O", got.extend)
    h = rt.input_handler("S")
    rnd, evs, i = random.Random(seed + 1), events(seed), 0
    while i < len(evs):
        size = rnd.choice([1, 2, 3, n - 1, n, n + 1, 7, 64, 200])
        assert h.send_batch(evs[i : i + max(size, 1)]) == []
        i += max(size, 1)
    rt.shutdown()
    return repr(got)  # repr: NaN and -0.0 compare exactly


@pytest.mark.parametrize("select", SELECTS)
@pytest.mark.parametrize("n", [1, 3, 10, 100])
@pytest.mark.parametrize("seed", [1, 2])
def test_lean_loop_equals_plain_loop(select, n, seed):
    assert run(select, n, seed, True) == run(select, n, seed, False)


def test_the_comparison_catches_a_wrong_pairing(monkeypatch):
    """A lean loop that pairs each event with the wrong expired one must be told apart."""

    def broken(n, c):
        return [x.replace("_chain(W, batch)", "_chain(batch, W)") for x in real(n, c)]

    real = fused._lean_length
    monkeypatch.setattr(fused, "_lean_length", broken)
    assert run(SELECTS[0], 10, 1, True) != run(SELECTS[0], 10, 1, False)


def test_long_windows_keep_the_plain_loop():
    n = fused.LEAN_MAX + 1
    rt = cep.ExecutionPlanRuntime(
        cep.compile(
            "@Plan:playback\ndefine stream S (sym string, price double, vol long);\n"
            f"from S#window.length({n}) select sum(price) as s insert into O;"
        )
    )
    (sel,) = [p for p in rt.ctx.stateful.values() if isinstance(p, fused.FusedWindowSelector)]
    assert "_chain" not in sel.code.fn.source


def test_expired_rows_wanted_keep_the_plain_loop():
    rt = cep.ExecutionPlanRuntime(
        cep.compile(
            "@Plan:playback\ndefine stream S (sym string, price double, vol long);\n"
            "from S#window.length(5) select sum(price) as s insert all events into O;"
        )
    )
    (sel,) = [p for p in rt.ctx.stateful.values() if isinstance(p, fused.FusedWindowSelector)]
    assert "_chain" not in sel.code.fn.source
