"""Row batches through a query's columnar kernel (cep/engine/columnar/adaptive.py): forced
through the kernels, every conformance case gives the rows' output; measured, each query
takes the path that costs it less and the output does not change."""

import os
import time

import pytest
import yaml

import cep
from cep.engine.columnar import adaptive
from cep.engine.columnar.adaptive import RowsThroughKernel
from cep.errors import CepError
from cep.model import AttrType, Attribute, StreamDefinition
from tests.cep.engine.test_columnar_conformance import CASES, FILES, _run


def _rows_with(monkeypatch, case, force):
    monkeypatch.setattr(adaptive, "FORCE", force)
    return _run(case, False)


@pytest.mark.parametrize("name", FILES)
def test_rows_through_the_kernels_equal_the_row_path(name, monkeypatch):
    with open(os.path.join(CASES, name)) as f:
        case = yaml.safe_load(f)
    if case.get("error"):
        pytest.skip("a rejected plan")
    try:
        rows = _rows_with(monkeypatch, case, False)
    except CepError:
        pytest.skip("the plan is rejected here")
    assert _rows_with(monkeypatch, case, True) == rows


DEF = StreamDefinition("S", (Attribute("x", AttrType.LONG),))


def _burn(ms):
    end = time.thread_time() + ms / 1000
    while time.thread_time() < end:
        pass


@pytest.mark.parametrize("rows_ms,cols_ms,expect", [(3, 0.3, True), (0.3, 3, False)])
def test_the_cheaper_path_per_event_takes_the_batches(rows_ms, cols_ms, expect):
    calls = []
    sel = RowsThroughKernel(
        DEF,
        lambda b: (calls.append("rows"), _burn(rows_ms)),
        lambda c: (calls.append("cols"), _burn(cols_ms)),
    )
    batch = [(i, (i,), 0) for i in range(100)]
    trial = 2 * adaptive.BLOCK * adaptive.ROUNDS
    for _ in range(trial):
        sel(batch)
    assert not sel.deciding and sel.use_columns is expect
    assert calls == (["rows"] * adaptive.BLOCK + ["cols"] * adaptive.BLOCK) * adaptive.ROUNDS
    calls.clear()
    for _ in range(5):
        sel(batch)
    assert calls == ["cols" if expect else "rows"] * 5
    sel([(1, (1,), 0)] * (adaptive.MIN_BATCH - 1))  # a small batch stays rows
    assert calls[-1] == "rows"


def test_a_kernel_that_declines_hands_the_batch_back_as_rows():
    calls = []
    sel = None

    def columns(cols):
        calls.append(("cols", len(cols)))
        sel(cols.events())  # as FusedWindowSelector.process_columns does when it declines

    sel = RowsThroughKernel(DEF, lambda b: calls.append(("rows", len(b))), columns)
    sel.deciding, sel.use_columns = False, True
    sel([(i, (i,), 0) for i in range(100)])
    assert calls == [("cols", 100), ("rows", 100)]


PLAN = """define stream S (sym string, price double, vol long);
from S select str:upper(sym) as u, str:length(sym) as n, str:concat(sym, '-', sym) as c,
    math:abs(price) as a, math:sqrt(vol) as r, math:floor(price) as f
insert into Out;
from S#window.length(50) select sym, sum(vol) as v, avg(price) as p group by sym insert into Agg;
from S[price > 10.0] select sym, price insert into Cheap;
"""


def _outputs(batches):
    rt = cep.ExecutionPlanRuntime(cep.compile(PLAN), playback=True)
    got = {}
    for sid in ("Out", "Agg", "Cheap"):
        rt.add_callback(sid, lambda evs, sid=sid: got.setdefault(sid, []).extend(evs))
    for b in batches:
        assert rt.input_handler("S").send_batch(b) == []
    rt.shutdown()
    return {k: repr(v) for k, v in got.items()}


def test_measuring_changes_no_output(monkeypatch):
    syms = ["IBM", "WSO2", "ORCL"]
    batches = [
        [(1000 + 200 * j + i, (syms[i % 3], float(i % 17) - 3.5, i * 7 + j)) for i in range(200)]
        for j in range(40)
    ]
    monkeypatch.setattr(adaptive, "FORCE", False)
    rows = _outputs(batches)
    monkeypatch.setattr(adaptive, "FORCE", None)
    assert _outputs(batches) == rows
