"""The two-step pattern keyed kernel against the engine fed key by key."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import cep
from cep.engine.columnar.keyed import pattern
from tests.cep.engine.columnar.keyed_reference import assert_same, kernel_for, keyed_data

HEAD = """define stream S (sym string, price double, qty int, vol long, f float);
partition with (sym of S) begin
"""
W = 1000  # ms: `within`; the data's gaps include W - 1, W and W + 1


def _cols(rng, keyid):
    n = len(keyid)
    price = 100 * rng.choice([1.0, 1.04, 1.06, 1.2, 0.9, -1.0, 0.0, -0.0], n)
    price[rng.random(n) < 0.05] = np.nan
    return {
        "sym": np.array([f"K{k}" for k in keyid], dtype=object),
        "price": price,
        "qty": rng.integers(-3, 8, n).astype(np.int32),
        "vol": rng.choice([1, 7, 2**62, -(2**63)], n).astype(np.int64),
        "f": rng.choice([0.5, 1.5, np.nan, -2.0], n).astype(np.float32),
    }


QUERIES = [
    "from every e1=S -> e2=S[price > e1.price * 1.05] within 1 sec "
    "select e1.sym as sym, e1.price as before, e2.price as after insert into O;",
    "from every e1=S[qty > 0] -> e2=S[price > e1.price * 1.05] within 1 sec "
    "select e1.sym as sym, e1.price as before, e2.price as after, e2.qty as q insert into O;",
    "from every e1=S[qty > 2] -> e2=S[qty < e1.qty and vol != e1.vol] "
    "select e1.sym as sym, e1.qty + e2.qty as q, e2.vol * 2 as v insert into O;",
    "from every e1=S[f > 0.0] -> e2=S[e2.f != e1.f or price >= e1.price] within 999 milliseconds "
    "select e2.sym as sym, e1.f as f1, e2.f * e1.f as ff insert into O;",
    "from every e1=S -> e2=S within 1 sec select e1.price as a, e2.price as b insert into O;",
    "from every e1=S[qty > 100] -> e2=S select e1.sym as sym insert into O;",
    "from every e1=S[qty > 0], e2=S[price > e1.price] within 1 sec "
    "select e1.sym as sym, e1.price as a, e2.price as b insert into O;",
    "from every e1=S, e2=S[qty >= e1.qty] select e2.qty as q, e1.vol as v insert into O;",
]


@pytest.fixture(params=[16, 0], ids=["scan", "jump"])
def reach(request, monkeypatch):
    """The forward scan, or binary lifting (jump.py) for every lone range condition."""
    monkeypatch.setattr(pattern, "JUMP_REACH", request.param)
    return request.param


RANGED = [
    "from every e1=S -> e2=S[e1.price * 1.05 < price] within 1 sec "
    "select e1.sym as sym, e1.price as before, e2.price as after insert into O;",
    "from every e1=S[qty > 0] -> e2=S[qty < e1.qty - 1] select e2.qty as q insert into O;",
    "from every e1=S -> e2=S[vol > e1.qty] within 2 sec select e2.vol as v insert into O;",
    "from every e1=S -> e2=S[f < e1.f] select e1.f as a, e2.f as b insert into O;",
    "from every e1=S -> e2=S[price < e1.f] select e1.f as a, e2.price as b insert into O;",
    "from every e1=S[qty > 3] -> e2=S[price > 100.0] select e1.qty as q, e2.price as p "
    "insert into O;",
]


@pytest.mark.parametrize("query", QUERIES + RANGED)
@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_pattern_equals_engine(query, seed, reach):
    rng = np.random.default_rng(seed)
    ts, starts, keyid = keyed_data(rng, 50, 12, 3 * W, [0, 0, 1, W - 1, W, W + 1, W // 3])
    rows = assert_same(cep.compile(HEAD + query + "\nend;"), 0, "S", ts, starts, _cols(rng, keyid))
    assert (rows == 0) == ("qty > 100" in query)


def test_lone_range_conditions_take_the_jump():
    shapes = [kernel_for(cep.compile(HEAD + q + "\nend;")).jump for q in RANGED + QUERIES[:1]]
    assert [s[1] for s in shapes] == [">", "<", ">", "<", "<", ">", ">"]
    assert kernel_for(cep.compile(HEAD + QUERIES[2] + "\nend;")).jump is None


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    nkeys=st.integers(1, 30),
    per=st.integers(0, 25),
    q=st.sampled_from(QUERIES[:5] + QUERIES[6:] + RANGED),
    jump_reach=st.sampled_from([0, 16]),
)
def test_pattern_hypothesis(seed, nkeys, per, q, jump_reach):
    rng = np.random.default_rng(seed)
    ts, starts, keyid = keyed_data(rng, nkeys, per, 2 * W, [0, 0, 1, W - 1, W, W + 1])
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(pattern, "JUMP_REACH", jump_reach)
        assert_same(cep.compile(HEAD + q + "\nend;"), 0, "S", ts, starts, _cols(rng, keyid))


@pytest.mark.parametrize(
    "query",
    [
        "from every e1=S -> e2=S[price > e1.price] -> e3=S select e1.sym as s insert into O;",
        "from every (e1=S -> e2=S[price > e1.price]) select e1.sym as s insert into O;",
        "from e1=S -> e2=S[price > e1.price] select e1.sym as s insert into O;",
        "from every e1=S, e2=S[price > e1.price], e3=S select e1.sym as s insert into O;",
        "from every e1=S -> e2=S[price > e1.price] select e1.sym as s, count() as c insert into O;",
        "from every e1=S -> e2=S[price / e1.price > 1.05] select e1.sym as s insert into O;",
        "from every e1=S[price > e2.price] -> e2=S select e1.sym as s insert into O;",
    ],
)
def test_declines(query):
    assert kernel_for(cep.compile(HEAD + query + "\nend;")) is None


def test_declines_a_scan_over_its_budget(monkeypatch):
    """Without `within`, instances that never match scan to their key's end: past the work
    budget the batch goes to the engine."""
    plan = cep.compile(
        HEAD
        + QUERIES[5]
        .replace("qty > 100", "qty > 0")
        .replace("-> e2=S", "-> e2=S[qty > 1000 and vol != e1.vol]")
        + "\nend;"
    )
    kernel = kernel_for(plan)
    n = 3000
    rng = np.random.default_rng(0)
    cols = _cols(rng, np.zeros(n, int))
    cols["qty"][:] = 1
    ts = np.arange(n, dtype=np.int64)
    monkeypatch.setattr(pattern, "WORK_FLOOR", 0)
    assert kernel.run(ts, np.array([0, n]), cols, n) is None
    monkeypatch.setattr(pattern, "WORK_FLOOR", n * n)
    res = kernel.run(ts, np.array([0, n]), cols, n)
    assert res is not None and len(res[0]) == 0


@pytest.mark.parametrize("seed", [5, 6])
def test_dense_keys_far_matches(seed, reach):
    """A few long keys (random walks: matches hundreds of events later, some never):
    binary lifting over many levels, and the scan, both equal the engine."""
    rng = np.random.default_rng(seed)
    sizes = [1500, 700, 1]
    starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.intp)
    n = int(starts[-1])
    cols = _cols(rng, np.repeat(np.arange(3), sizes))
    cols["price"] = 100 + np.cumsum(rng.normal(0, 1, n))
    cols["price"][rng.random(n) < 0.01] = np.nan
    ts = np.concatenate([np.sort(rng.integers(0, 10 * W, s)) for s in sizes]).astype(np.int64)
    for q in (
        RANGED[0].replace("within 1 sec", "within 5 sec"),
        RANGED[0].replace("within 1 sec", ""),
    ):
        assert assert_same(cep.compile(HEAD + q + "\nend;"), 0, "S", ts, starts, cols) > 100
