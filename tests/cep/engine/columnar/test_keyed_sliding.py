"""The sliding-aggregate keyed kernel against the engine fed key by key."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import cep
from tests.cep.engine.columnar.keyed_reference import assert_same, kernel_for, keyed_data

HEAD = """define stream S (sym string, price double, qty int, vol long, f float, g int);
partition with (sym of S) begin
"""
T = 1000  # ms: the time windows' length; the data's gaps include T - 1, T and T + 1


def _cols(rng, keyid, nasty=True):
    n = len(keyid)
    base = [0.1, 0.2, 0.3, 1e16, -1e16, -2.5, 100.125, 1 / 3, -0.0, 0.0]
    if nasty:
        base += [np.nan, np.inf, -np.inf]
    return {
        "sym": np.array([f"K{k}" for k in keyid], dtype=object),
        "price": rng.choice(base, n) * rng.choice([1.0, 3.0, -7.0], n),
        "qty": rng.integers(-2, 6, n).astype(np.int32),
        "vol": rng.choice([1, -1, 2**62, 2**63 - 1, -(2**63), 12345], n).astype(np.int64),
        "f": rng.choice([0.1, -3.5, 1e30, 2.5e38], n).astype(np.float32),
        "g": rng.integers(0, 3, n).astype(np.int32),
    }


QUERIES = [
    "from S[qty > 0]#window.time(1 sec) select sym, avg(price) as avgPrice, count() as trades "
    "insert into O;",
    "from S#window.time(1 sec) select sym, sum(price) as s, sum(vol) as sv, sum(qty) as sq, "
    "avg(qty) as aq insert into O;",
    "from S#window.length(3) select sym, price, avg(price) as a, sum(f) as sf, avg(vol) as av "
    "insert into O;",
    "from S[price > -3.0]#window.length(1) select sym, sum(price) as s, count() as c "
    "insert into O;",
    "from S#window.time(1 sec) select sym, g, sum(price) as s, avg(price) as a, count() as c, "
    "sum(vol) as sv group by g insert into O;",
    "from S[qty != 0]#window.length(4) select sym, g, qty * 2 as q2, avg(price) as a, "
    "count(qty) as c group by g, qty insert into O;",
    "from S#window.time(1) select sym, sum(price) as s, count() as c insert into O;",
    "from S[qty > 100]#window.time(1 sec) select sym, sum(price) as s insert into O;",
    "from S#window.time(1 sec) select count() as c, sum(price * 2.0) as s2 group by g "
    "insert into O;",
    "from S#window.time(1 sec) select sym, g, avg(price) as a, count() as c group by g "
    "having a > 0.0 and c >= 2 insert into O;",
    "from S#window.length(3) select sym, sum(vol) as sv having sv != 1 or sym == 'K3' "
    "insert into O;",
]


@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_sliding_equals_engine(query, seed):
    rng = np.random.default_rng(seed)
    ts, starts, keyid = keyed_data(rng, 50, 12, 3 * T, [0, 1, T - 1, T, T + 1, T // 3])
    plan = cep.compile(HEAD + query + "\nend;")
    rows = assert_same(plan, 0, "S", ts, starts, _cols(rng, keyid))
    assert (rows == 0) == ("qty > 100" in query)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    nkeys=st.integers(1, 30),
    per=st.integers(0, 20),
    q=st.sampled_from(QUERIES[:6] + QUERIES[-2:]),
)
def test_sliding_hypothesis(seed, nkeys, per, q):
    rng = np.random.default_rng(seed)
    ts, starts, keyid = keyed_data(rng, nkeys, per, 2 * T, [0, 0, 1, T - 1, T, T + 1])
    assert_same(cep.compile(HEAD + q + "\nend;"), 0, "S", ts, starts, _cols(rng, keyid))


@pytest.mark.parametrize(
    "query",
    [
        "from S#window.time(1 sec) select sym, min(price) as m insert into O;",
        "from S#window.time(1 sec) select sym, sum(price) as s having sum(qty) > 1 insert into O;",
        "from S#window.timeBatch(1 sec) select sym, sum(price) as s insert into O;",
        "from S#window.time(1 sec) select sym, sum(price) as s group by price insert into O;",
        "from S#window.time(1 sec) select sym, sum(price) / 2.0 as s insert into O;",
        "from S#window.time(1 sec) select sym, sum(price) as s insert all events into O;",
    ],
)
def test_declines(query):
    assert kernel_for(cep.compile(HEAD + query + "\nend;")) is None


def test_declines_an_unpartitioned_stateful_query():
    plan = cep.compile(
        "define stream S (sym string, price double);\n"
        "from S#window.length(2) select sum(price) as s insert into O;"
    )
    assert kernel_for(plan) is None
