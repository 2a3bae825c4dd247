"""The stateless keyed kernel against the engine fed key by key (keyed_reference.py)."""

import numpy as np
import pytest

import cep
from tests.cep.engine.columnar.keyed_reference import assert_same, kernel_for, keyed_data

HEAD = """define stream S (sym string, price double, qty int, vol long, f float, ok bool);
partition with (sym of S) begin
"""


def _cols(rng, keyid):
    n = len(keyid)
    price = rng.choice([1.5, -2.25, 0.0, -0.0, np.nan, np.inf, 100.125], n) * rng.integers(1, 4, n)
    return {
        "sym": np.array([f"K{k}" for k in keyid], dtype=object),
        "price": price,
        "qty": rng.integers(-5, 6, n).astype(np.int32),
        "vol": rng.integers(-(2**62), 2**62, n).astype(np.int64),
        "f": rng.choice([0.1, -3.5, np.nan, 2.5e38], n).astype(np.float32),
        "ok": rng.integers(0, 2, n).astype(bool),
    }


QUERIES = [
    "from S[qty > 0] select sym, price * 2.0 as p2, qty + 1 as q1 insert into O;",
    "from S[price > 0.5 and not ok] select sym, vol * 3 as v3, f * f as ff insert into O;",
    "from S select * insert into O;",
    "from S[qty > 100] select sym insert into O;",  # drops every event of every key
    "from S[f < 1.0 or vol != 7]#window.length(3) select sym, -price as np insert into O;",
    "from S[ok == true]#window.time(1 sec) select sym, qty, 5 as five insert into O;",
    "from S select sym, price * 2.0 as p2, qty having p2 > 1.0 and qty != 3 insert into O;",
]


@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_stateless_equals_engine(query, seed):
    rng = np.random.default_rng(seed)
    ts, starts, keyid = keyed_data(rng, 40, 8, 2000)
    plan = cep.compile(HEAD + query + "\nend;")
    rows = assert_same(plan, 0, "S", ts, starts, _cols(rng, keyid))
    assert (rows == 0) == ("qty > 100" in query)


@pytest.mark.parametrize(
    "query",
    [
        "from S[qty > 0] select sym, price / 2.0 as half insert into O;",  # division: no exact form
        "from S#window.lengthBatch(3) select sym insert into O;",
        "from S[qty > 0] select sym insert expired events into O;",
        "from S select sym, price order by price insert into O;",
        "from S select sym output every 3 events insert into O;",
    ],
)
def test_declines(query):
    assert kernel_for(cep.compile(HEAD + query + "\nend;")) is None


def test_declines_a_column_of_another_type():
    plan = cep.compile(HEAD + "from S select sym, qty insert into O;\nend;")
    k = kernel_for(plan)
    cols = _cols(np.random.default_rng(0), np.zeros(3, int))
    cols["qty"] = cols["qty"].astype(np.float64)
    assert k.run(np.arange(3, dtype=np.int64), np.array([0, 3]), cols, 10) is None
