"""insert into, update, delete and update or insert round trips on database tables (SQLite and
PostgreSQL) against the in-memory table: after each step the rows are the same, in the same
order, and a later event in a batch sees an earlier one's write. Rows survive a restart
because they live in the database, and the engine's snapshot does not bring them back."""

import pytest

from tests.cep.engine.helpers import collect, feed, runtime

PLAN = """@Plan:playback
define stream Ins (k string, v int, note string);
define stream Set (k string, v int);
define stream Up (k string, v int, note string);
define stream Del (k string);
define stream Bump (lo int);
define stream Ask (k string);
{ann}{key}define table T (k string, v int, note string);
from Ins insert into T;
from Set select k, v update T on T.k == k;
from Up insert overwrite T on T.k == k;
from Del delete T on T.k == k;
from Bump update T set T.v = T.v + 100 on T.v > lo and T.k != 'dd';
from Ask join T on T.k == Ask.k select Ask.k as k, T.v as v, T.note as note insert into Got;
"""

STEPS = [
    (
        [
            ("Ins", 1, ("a", 1, "x")),
            ("Ins", 2, ("b", 2, None)),
            ("Ins", 3, ("c", 3, "z")),
            ("Ins", 4, ("dd", 4, "w")),
        ],
        [("a", 1, "x"), ("b", 2, None), ("c", 3, "z"), ("dd", 4, "w")],
    ),
    (
        [("Set", 5, ("b", 20)), ("Set", 6, ("nope", 9))],
        [("a", 1, "x"), ("b", 20, None), ("c", 3, "z"), ("dd", 4, "w")],
    ),
    (
        [("Up", 7, ("c", 30, "zz")), ("Up", 8, ("e", 5, "new"))],
        [("a", 1, "x"), ("b", 20, None), ("c", 30, "zz"), ("dd", 4, "w"), ("e", 5, "new")],
    ),
    (
        [("Del", 9, ("a",)), ("Del", 10, ("zzz",))],
        [("b", 20, None), ("c", 30, "zz"), ("dd", 4, "w"), ("e", 5, "new")],
    ),
    # != stays in the engine, T.v > lo goes to SQL: keys other than dd above 4
    ([("Bump", 11, (4,))], [("b", 120, None), ("c", 130, "zz"), ("dd", 4, "w"), ("e", 105, "new")]),
]


def _annotation(backend, keyed, cache):
    key = "@PrimaryKey('k')\n" if keyed else ""
    if backend == "memory":
        return "", key
    ds = "default" if backend == "sqlite" else "pg"
    extra = f", cache='{cache}'" if cache else ""
    return f"@from(eventtable='rdbms', datasource.name='{ds}', table.name='t'{extra})\n", key


def _round_trip(backend, keyed, cache, batch):
    ann, key = _annotation(backend, keyed, cache)
    rt = runtime(PLAN.format(ann=ann, key=key))
    table = rt.tables["T"]
    for events, want in STEPS:
        feed(rt, events, batch)
        assert table.all_rows() == want
        assert len(table) == len(want)
    got = collect(rt, ["Got"])
    feed(rt, [("Ask", 20, ("c",)), ("Ask", 21, ("a",)), ("Ask", 22, ("e",))])
    assert [r for _, r in got["Got"]] == [("c", 130, "zz"), ("e", 105, "new")]
    # one batch: the update sees the insert before it, the delete sees both
    feed(rt, [("Ins", 30, ("f", 1, None))], batch)
    feed(rt, [("Set", 31, ("f", 2)), ("Set", 32, ("f", 3))], batch)
    assert table.all_rows()[-1] == ("f", 3, None)
    snapshot = rt.snapshot()
    rt.shutdown()
    return snapshot


@pytest.mark.parametrize("keyed", [True, False], ids=["keyed", "plain"])
@pytest.mark.parametrize("batch", [1, 4])
def test_memory_round_trip(keyed, batch):
    _round_trip("memory", keyed, None, batch)


@pytest.mark.parametrize("cache", [None, "LRU"])
@pytest.mark.parametrize("keyed", [True, False], ids=["keyed", "plain"])
@pytest.mark.parametrize("batch", [1, 4])
def test_sqlite_round_trip(keyed, batch, cache, datasources):
    datasources()
    _round_trip("sqlite", keyed, cache, batch)


@pytest.mark.parametrize("keyed", [True, False], ids=["keyed", "plain"])
def test_postgresql_round_trip(keyed, datasources, pg_database):
    datasources({"pg": {"url": pg_database}})
    _round_trip("postgres", keyed, "LFU", 4)


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_rows_survive_a_restart_and_a_snapshot_does_not_restore_them(backend, datasources, request):
    if backend == "postgres":
        datasources({"pg": {"url": request.getfixturevalue("pg_database")}})
    else:
        datasources()
    ann, key = _annotation(backend, True, "LRU")
    plan = PLAN.format(ann=ann, key=key)
    rt = runtime(plan)
    feed(rt, [("Ins", 1, ("a", 1, "x")), ("Ins", 2, ("b", 2, "y"))])
    snapshot = rt.snapshot()
    feed(rt, [("Del", 3, ("a",))])
    rt.shutdown()

    again = runtime(plan)  # a restarted worker: a new runtime on the same database
    assert again.tables["T"].all_rows() == [("b", 2, "y")]
    again.restore(snapshot)  # the snapshot holds no rows: the database's rows stay as they are
    assert again.tables["T"].all_rows() == [("b", 2, "y")]
    got = collect(again, ["Got"])
    feed(again, [("Ask", 4, ("b",)), ("Ask", 5, ("a",))])
    assert [r for _, r in got["Got"]] == [("b", 2, "y")]
    again.shutdown()
