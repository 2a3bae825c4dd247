"""A batch gives exactly the output of sending its events one at a time, for every processor
kind other than windows (tests/cep/engine/test_windows.py covers those)."""

import pytest

from tests.cep.engine.helpers import run_plan, ticks

HEAD = "@Plan:playback\ndefine stream S (sym string, price double, ets long);\n"
PLANS = {
    "filter+projection": "from S[price > 8.0 and sym != 'A'] select sym, price * 2 as p2, "
    "ifThenElse(price > 15.0, 'hi', 'lo') as band insert into O;",
    "select *": "from S select * insert into O;",
    "running aggregates": "from S select sym, sum(price) as s, avg(price) as a, count() as c, "
    "min(price) as lo, max(price) as hi insert into O;",
    "group by + having": "from S select sym, sum(price) as s group by sym having s > 20.0 "
    "insert into O;",
    "chained streams": "from S[price > 5.0] select sym, price insert into Mid;\n"
    "from Mid#window.length(3) select sym, sum(price) as s "
    "insert expired events into O;",
    "every N events": "from S select sym, price output every 4 events insert into O;",
    "first every N events": "from S select sym, price group by sym "
    "output first every 5 events insert into O;",
    "last every N events": "from S select sym, count() as c group by sym "
    "output last every 5 events insert into O;",
    "all every T": "from S select sym, price output every 3 sec insert into O;",
    "first every T": "from S select sym, price group by sym output first every 2 sec "
    "insert into O;",
    "last every T": "from S select sym, price output last every 2 sec insert into O;",
    "snapshot every T": "from S#window.time(3 sec) select sym, sum(price) as s group by sym "
    "output snapshot every 2 sec insert into O;",
    "eventTimestamp": "from S select eventTimestamp() as t, currentTimeMillis() as c "
    "insert into O;",
}


@pytest.mark.parametrize("name", sorted(PLANS))
def test_batch_equals_one_at_a_time(name):
    items = ticks(seed=21, n=120)
    one = run_plan(HEAD + PLANS[name], items, ["O"], batch=1)
    assert one["O"], "the workload must produce output"
    for size in (3, 1000):
        assert run_plan(HEAD + PLANS[name], items, ["O"], batch=size) == one, size
