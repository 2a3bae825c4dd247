"""The `unique(attr)` kernel (cep/engine/columnar/uniquewin.py) against the row loop: random
events with repeated keys within and across batches, nulls, signed zeros, NaN and
infinities, batches of every size, groups that empty; sent as columns, and as rows and
columns in turn (row batches keep the window's loop, which writes the kernel's events back), with a snapshot restored part-way. Every output must be the
row loop's exactly. With the Siddhi kit at hand, the same plans against Siddhi 3.2.15."""

import numpy as np
import pytest

import cep
from cep.engine.columnar import adaptive, uniquewin
from tests.cep.engine.columnar.test_batch_windows import HAVE_KIT, NAMES, _cuts, siddhi_outputs
from tests.cep.engine.columnar.test_sliding_windows import HEAD, _events, _run

QUERIES = [
    "from S#window.unique(sym) select sum(price) as s insert into Out;",
    "from S#window.unique(q) select sym, avg(price) as a, count() as c, sum(vol) as sv "
    "insert into Out;",
    "from S#window.unique(sym) select sym, sum(price) as s, count() as c group by sym "
    "insert into Out;",
    "from S#window.unique(vol) select q, sum(f) as sf, avg(q) as aq group by q insert into Out;",
]


@pytest.fixture
def taken(monkeypatch):
    count = [0]
    run = uniquewin.UniqueKernel._run

    def counted(self, *args):
        ok = run(self, *args)
        count[0] += ok
        return ok

    monkeypatch.setattr(uniquewin.UniqueKernel, "_run", counted)
    return count


def _small_keys(events):
    """q and vol from a few values, so keys repeat in and across batches."""
    return [(t, (r[0], r[1], r[2] % 7, r[3] % 5, r[4])) for t, r in events]


@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("nasty", [False, True])
def test_kernel_equals_the_row_loop(query, seed, nasty, monkeypatch, taken):
    plan = HEAD + query
    events = _small_keys(_events(seed, 900, nasty))
    cuts = _cuts(seed, len(events))
    with monkeypatch.context() as mp:
        mp.setattr(uniquewin, "install", lambda *a: False)
        expect = repr(_run(plan, events, cuts, "rows"))
    assert expect != "[]"
    monkeypatch.setattr(adaptive, "FORCE", True)
    for how in ("rows", "columns", "mixed"):
        assert repr(_run(plan, events, cuts, how)) == expect, how
    if not nasty:  # the columnar batches (row batches keep the window's loop)
        assert taken[0] > len(cuts) // 2


def test_a_snapshot_while_the_kernel_holds_the_newest_events(monkeypatch, taken):
    plan = HEAD + QUERIES[2]
    events = _small_keys(_events(4, 600, False))
    monkeypatch.setattr(adaptive, "FORCE", True)

    def feed(rt, part):
        cols = {n: [r[i] for _, r in part] for i, n in enumerate(NAMES)}
        rt.input_handler("S").send_columns(cols, np.array([t for t, _ in part], np.int64))

    whole = cep.ExecutionPlanRuntime(cep.compile(plan), playback=True)
    expect = []
    whole.add_callback("Out", expect.extend)
    feed(whole, events)
    first = cep.ExecutionPlanRuntime(cep.compile(plan), playback=True)
    got = []
    first.add_callback("Out", got.extend)
    taken[0] = 0
    feed(first, events[:250])
    assert taken[0] == 1
    second = cep.ExecutionPlanRuntime(cep.compile(plan), playback=True)
    second.add_callback("Out", got.extend)
    second.restore(first.snapshot())
    second.input_handler("S").send_batch(events[250:400])
    feed(second, events[400:])
    assert repr(got) == repr(expect)
    for rt in (whole, first, second):
        rt.shutdown()


@pytest.mark.slow
@pytest.mark.skipif(
    not HAVE_KIT, reason="the Siddhi 3.2.15 kit (../shared/siddhi-kit) and java are not here"
)
@pytest.mark.parametrize("query", QUERIES)
def test_kernel_equals_siddhi(query, tmp_path, monkeypatch, taken):
    plan = HEAD + query
    events = _small_keys(_events(17, 900, False))
    theirs = siddhi_outputs(plan, events, tmp_path)
    monkeypatch.setattr(adaptive, "FORCE", True)
    ours = _run(plan, events, _cuts(17, len(events)), "columns")
    assert theirs and taken[0] > 0
    assert ours == theirs
