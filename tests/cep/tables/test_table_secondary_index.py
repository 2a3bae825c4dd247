"""A table without a key answers `T.a == expr` from a hash index on `a` (SecondaryProbe): for
`in`, joins, `update`, `update or insert` and `delete`, over random inserts, rewrites and
deletes (the index built, kept up on inserts, built again after a change), the outputs and
the table's rows equal the scan's, in the same order. The scan is the same plan with
`not (T.a != expr)`, which no lookup can narrow."""

import random

import pytest

from cep.engine.table.store import SecondaryProbe
from tests.cep.engine.helpers import collect, feed, runtime

PLAN = """@Plan:playback
define stream Ins (k string, n int, v double);
define stream Ask (k string, n int);
define stream Up (k string, v double);
define stream Put (k string, n int, v double);
define stream Del (n int);
define table T (k string, n int, v double);
from Ins insert into T;
from Ask[{eq_k} in T] select k, n insert into Known;
from Ask[{eq_n} in T] select k, n insert into KnownN;
from Ask join T on {join} select Ask.k as k, T.n as n, T.v as v insert into Joined;
from Up update T set T.v = T.v + v on {eq_k};
from Put update or insert into T on {eq_k} and T.n == n;
from Del delete T on {del_n};
"""
INDEXED = PLAN.format(
    eq_k="T.k == k",
    eq_n="(T.n == n and T.v > 1.0)",
    join="T.k == Ask.k and T.n >= Ask.n",
    del_n="n == T.n",
)
SCANNED = PLAN.format(
    eq_k="not (T.k != k)",
    eq_n="(not (T.n != n) and T.v > 1.0)",
    join="not (T.k != Ask.k) and T.n >= Ask.n",
    del_n="not (n != T.n)",
)
OUTS = ["Known", "KnownN", "Joined"]


def _events(seed, n=600):
    rnd = random.Random(seed)
    keys = ["a", "b", "c", "d", "e", None]
    items = []
    for i in range(n):
        kind = rnd.choices(["Ins", "Ask", "Up", "Put", "Del"], [5, 6, 2, 2, 1])[0]
        k, num = rnd.choice(keys), rnd.randrange(6)
        row = {
            "Ins": (k, num, float(rnd.randrange(4))),
            "Ask": (k, num),
            "Up": (k, 0.5),
            "Put": (k, num, 9.0),
            "Del": (num,),
        }[kind]
        items.append((kind, 1000 + i, row))
    return items


def _run(text, items, batch):
    rt = runtime(text)
    got = collect(rt, OUTS)
    feed(rt, items, batch)
    rows = rt.tables["T"].all_rows() if hasattr(rt, "tables") else None
    rt.shutdown()
    return got, rows


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("batch", [1, 50])
def test_the_index_gives_the_scans_outputs_and_rows(seed, batch):
    items = _events(seed)
    indexed, rows_i = _run(INDEXED, items, batch)
    scanned, rows_s = _run(SCANNED, items, batch)
    assert sum(len(v) for v in scanned.values()) > 50  # the events meet the conditions
    assert indexed == scanned
    assert rows_i == rows_s


def test_the_plan_uses_the_index_where_types_match_and_scans_where_they_do_not():
    from cep.engine.table.store import Table

    rt = runtime(INDEXED)
    table = rt.tables["T"]
    assert isinstance(table, Table) and not table.indexed
    feed(rt, [("Ins", 1, ("a", 1, 2.0)), ("Ask", 2, ("a", 1))])
    assert set(table._by) == {0, 1}  # k (the `in` and join) and n (the second `in`) are indexed
    rt.shutdown()
    # an int attribute against a long expression: no index (the scan decides)
    mixed = runtime(
        "define stream S (n long);\ndefine table T (n int);\n"
        "from S[(T.n == n) in T] select n insert into Out;"
    )
    feed(mixed, [("S", 1, (1,))])
    assert mixed.tables["T"]._by == {}
    mixed.shutdown()


def test_the_index_is_kept_up_on_inserts_and_built_again_after_a_delete():
    import cep
    from cep.engine.table.store import Table

    plan = cep.compile("define table T (k string, n int);")
    t = Table(plan.tables[0])
    probe = SecondaryProbe(0, lambda r: r[0])
    t.insert([("x", 1), ("y", 2), ("x", 3)])
    assert list(t.find(probe, "x")) == [("x", 1), ("x", 3)]
    t.insert([("x", 4)])  # kept up on insert
    assert list(t.find(probe, "x")) == [("x", 1), ("x", 3), ("x", 4)]
    t.delete([("x",)], lambda row, r: row[1] == 3, probe)
    assert list(t.find(probe, "x")) == [("x", 1), ("x", 4)] and len(t) == 3
    assert t.contains(("y",), None, probe) and not t.contains(("z",), None, probe)
