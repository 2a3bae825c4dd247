"""The keyed kernels' helpers, and the backtest benchmark plan's queries end to end."""

import os
import sys

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import cep
from cep.engine.columnar.keyed import KeyedKernel, base, keyed_kernel, scan
from tests.cep.engine.columnar.keyed_reference import assert_same, kernel_for, plan_query

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "benchmarks"))


def _loop_sums(vals, starts):
    out, ends = [], list(starts[1:]) + [len(vals)]
    for a, b in zip(starts, ends):
        s = None
        for x in vals[a:b].tolist():
            s = x if s is None else s + x
            out.append(s)
    return np.array(out)


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 80), min_size=1, max_size=60),
    seed=st.integers(0, 99),
    long_one=st.integers(0, 3000),
)
def test_running_sums_are_the_row_loops(sizes, seed, long_one):
    """Packed rows and the per-segment tails both add in the row loop's order."""
    rng = np.random.default_rng(seed)
    sizes = sizes + ([long_one] if long_one else [])
    rng.shuffle(sizes)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.intp)
    n = int(sum(sizes))
    vals = rng.choice([0.1, -0.1, 1e17, -1e17, 1 / 3, -0.0, 3.5], n) * rng.choice(
        [1.0, 7.0, -3.0], n
    )
    got, want = scan.running_sums(vals, starts), _loop_sums(vals, starts)
    assert got.tobytes() == want.tobytes()


def test_key_time_orders_keys_and_refuses_overflow():
    key, t = np.array([0, 0, 1, 1]), np.array([5, 9, 1, 2], np.int64)
    comp = scan.key_time(key, t, 2, 100)
    assert (np.diff(comp) > 0).all() and comp[1] + 100 < comp[2]
    assert scan.key_time(key, np.array([0, 2**61, 0, 1], np.int64), 5, 0) is None


@pytest.mark.parametrize("chunk", [1 << 19, 1000, 97])
def test_the_backtest_plan_runs_on_kernels(chunk, monkeypatch):
    """Both queries on kernels, equal to the engine, in one chunk or in chunks of keys."""
    from backtest_bench import PLAN

    monkeypatch.setattr(base, "CHUNK", chunk)
    plan = cep.compile(PLAN)
    rng = np.random.default_rng(15)
    nkeys, n = 200, 20_000
    key = np.sort(rng.integers(0, nkeys, n))
    starts = np.searchsorted(key, np.arange(nkeys + 1)).astype(np.intp)
    ts = 1_700_000_000_000 + np.sort(rng.permutation(n * 5)[:n]).astype(np.int64)
    ts = np.concatenate([np.sort(ts[a:b]) for a, b in zip(starts[:-1], starts[1:])])
    cols = {
        "sym": np.array([f"K{k:05d}" for k in key], dtype=object),
        "price": 100 * np.exp(rng.normal(0, 0.03, n)),
        "qty": ((key % 7) - 1).astype(np.int32),
    }
    kinds = set()
    for i in (0, 1):
        kernel = kernel_for(plan, i)
        assert isinstance(kernel, KeyedKernel) and kernel.input_stream == "Trades"
        kinds.add(type(kernel).__name__)
        assert assert_same(plan, i, "Trades", ts, starts, cols) > 100
    assert kinds == {"SlidingKernel", "PatternKernel"}
    assert kernel_for(plan, 0).output_attributes == [
        ("sym", cep.model.AttrType.STRING),
        ("avgPrice", cep.model.AttrType.DOUBLE),
        ("trades", cep.model.AttrType.LONG),
    ]


@pytest.mark.parametrize("index", [0, 1])
def test_no_events_and_missing_columns(index):
    from backtest_bench import PLAN

    kernel = kernel_for(cep.compile(PLAN), index)
    empty = {"sym": np.empty(0, object), "price": np.empty(0), "qty": np.empty(0, np.int32)}
    out_ts, out, key = kernel.run(np.empty(0, np.int64), np.array([0], np.intp), empty, 0)
    assert (
        len(out_ts) == 0 and len(key) == 0 and set(out) == {n for n, _ in kernel.output_attributes}
    )
    del empty["price"]
    assert kernel.run(np.empty(0, np.int64), np.array([0], np.intp), empty, 0) is None


def test_declines_unpartitioned_patterns_and_other_inputs():
    plan = cep.compile(
        "define stream S (sym string, price double);\n"
        "define stream R (sym string, price double);\n"
        "from every e1=S -> e2=S[price > e1.price] select e1.sym as s "
        "insert into O;\n"
        "from S join R on S.sym == R.sym select S.sym as s insert into P;\n"
    )
    defs = {s.id: s for s in plan.streams}
    for q in plan.elements:
        assert keyed_kernel(q, defs, {}) is None
    q, _ = plan_query(plan, 0)
    assert keyed_kernel(q, defs, {"S": "sym"}) is not None


class _Recording(dict):
    """The caller's columns, recording which ones a kernel reads."""

    def __init__(self, **cols):
        super().__init__(**cols)
        self.read = set()

    def __getitem__(self, name):
        self.read.add(name)
        return super().__getitem__(name)


@pytest.mark.parametrize("chunk", [1 << 19, 3])
def test_reads_only_the_columns_it_uses(chunk, monkeypatch):
    monkeypatch.setattr(base, "CHUNK", chunk)
    plan = cep.compile(
        "define stream S (sym string, price double, qty int, note string);\n"
        "partition with (sym of S) begin\n"
        "from every e1=S -> e2=S[price > e1.price] within 1 sec\n"
        "select e2.price as p insert into O;\n"
        "from S[qty > 0]#window.length(2) select avg(price) as a insert into A;\n"
        "end;"
    )
    ts = np.arange(6, dtype=np.int64)
    for index, used in ((0, {"price"}), (1, {"price", "qty"})):
        cols = _Recording(
            sym=np.array(list("aabbcc"), object),
            price=np.arange(6.0),
            qty=np.ones(6, np.int32),
            note=np.array(list("xxxxxx"), object),
        )
        assert kernel_for(plan, index).run(ts, np.array([0, 2, 4, 6]), cols, 6) is not None
        assert cols.read == used
