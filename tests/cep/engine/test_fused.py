"""The window-fused selector gives exactly the output of the window + selector chain."""

import pytest

from cep.engine.fused import FusedWindowSelector
from tests.cep.engine.helpers import run_plan, runtime, ticks

SELECTS = {
    "grouped": "select sym, sum(price) as s, avg(price) as a, count() as c, min(price) as lo, "
    "max(price) as hi, stddev(price) as sd group by sym",
    "plain": "select sym, sum(price) as s, distinctcount(sym) as dc, maxForever(price) as m",
    "having": "select sym, avg(price) as a group by sym having a > 8.0",
}


def plan(window, select, kind, after=""):
    return f"""@Plan:playback
    define stream S (sym string, price double, ets long);
    from S#window.{window}{after} {select} insert {kind} events into O;"""


@pytest.mark.parametrize("window", ["length(4)", "time(2 sec)"])
@pytest.mark.parametrize("select", sorted(SELECTS))
@pytest.mark.parametrize("kind", ["current", "expired", "all"])
def test_fused_equals_chain(window, select, kind):
    items = ticks(seed=5)
    fused_text = plan(window, SELECTS[select], kind)
    chain_text = plan(window, SELECTS[select], kind, after="[price > -1.0]")
    rt = runtime(fused_text)
    assert any(isinstance(p, FusedWindowSelector) for p in rt.ctx.stateful.values())
    rt = runtime(chain_text)
    assert not any(isinstance(p, FusedWindowSelector) for p in rt.ctx.stateful.values())
    fused = run_plan(fused_text, items, ["O"], batch=6)
    assert fused["O"], "the workload must produce output"
    assert fused == run_plan(chain_text, items, ["O"], batch=6)
