"""What of a table condition goes to SQL (cep.engine.table.pushdown), the result cache's
eviction orders, and that a condition the database refuses falls back to a scan with the same
result."""

import pytest
from sqlalchemy import Column, MetaData, Table
from sqlalchemy.dialects import postgresql, sqlite

import cep
from cep.engine.expressions import SingleStreamScope, compile_expression
from cep.engine.table.cache import ResultCache
from cep.engine.table.pushdown import sql_type, translate
from tests.cep.engine.helpers import collect, feed, runtime

HEAD = """define stream Q (sym string, n int, x double, ok bool);
define table T (sym string, price double, qty int, ok bool);
"""


def _pushed(condition):
    plan = cep.compile(HEAD + f"from Q join T on {condition} select Q.sym insert into Out;")
    table, stream = plan.table("T"), plan.stream("Q")
    sql = Table("t", MetaData(), *[Column(a.name, sql_type(a.type)) for a in table.attributes])
    scope = SingleStreamScope(stream, ["Q"])
    pushed = translate(
        plan.elements[0].input.on,
        [sql.c[a.name] for a in table.attributes],
        table,
        lambda v: v.stream == "T",
        lambda e: compile_expression(e, scope),
    )
    if pushed is None:
        return None, []
    text = str(pushed.where.compile(dialect=sqlite.dialect()))
    return text, [c.source for c in pushed.event_exprs]


def test_equality_comparison_and_arithmetic_go_to_sql_with_event_values_as_parameters():
    text, params = _pushed("T.sym == Q.sym and T.price * 2 > Q.x + 1 and T.qty <= 5")
    assert text == "t.sym = ? AND t.price * ? > ? AND t.qty <= ?"
    assert len(params) == 4  # Q.sym, the constant 2, Q.x + 1 (computed by the engine), 5


def test_an_untranslatable_conjunct_stays_in_the_engine_and_the_rest_is_pushed():
    text, _ = _pushed("T.sym == Q.sym and T.price / 2 > Q.x and T.sym != 'A'")
    assert text == "t.sym = ?"


def test_or_and_not_are_pushed_only_whole():
    assert _pushed("T.sym == Q.sym or T.price / 2 > Q.x")[0] is None
    text, _ = _pushed("T.sym == Q.sym or T.qty > Q.n")
    assert text == "t.sym = ? OR t.qty > ?"
    text, _ = _pushed("not (T.ok == Q.ok)")
    assert text == "coalesce(t.ok = ?, 0) = 0"  # a null comparison counts as false


def test_inequality_stays_in_the_engine_and_bools_compare_equal_in_sql():
    # `!=` with a null is true in the engine and unknown in SQL: never narrowed by SQL
    assert _pushed("T.sym != Q.sym")[0] is None
    assert _pushed("T.sym == Q.sym and T.ok == true")[0] == "t.sym = ? AND t.ok = ?"


def test_postgresql_gets_typed_parameters():
    plan = cep.compile(HEAD + "from Q join T on T.qty > Q.n select Q.sym insert into Out;")
    table, stream = plan.table("T"), plan.stream("Q")
    sql = Table("t", MetaData(), *[Column(a.name, sql_type(a.type)) for a in table.attributes])
    scope = SingleStreamScope(stream, ["Q"])
    pushed = translate(
        plan.elements[0].input.on,
        [sql.c[a.name] for a in table.attributes],
        table,
        lambda v: v.stream == "T",
        lambda e: compile_expression(e, scope),
    )
    assert str(pushed.where.compile(dialect=postgresql.dialect())) == "t.qty > %(p0)s::INTEGER"


@pytest.mark.parametrize(
    "policy, touch, evicted",
    [
        ("basic", "a", "a"),  # first in, first out: a use does not matter
        ("lru", "a", "b"),  # a was used last: b is the least recently used
        ("lfu", "b", "a"),  # b was used twice: a (used once, oldest) goes
    ],
)
def test_cache_eviction_follows_the_policy(policy, touch, evicted):
    cache = ResultCache(policy, 3)
    for k in "abc":
        cache.put(k, (k,))
    if policy == "lfu":
        cache.get("c")
    assert cache.get(touch) == (touch,)
    cache.put("d", ("d",))
    assert len(cache) == 3 and cache.get(evicted) is None
    assert all(cache.get(k) is not None for k in "abcd" if k != evicted)


def test_a_cache_entry_older_than_its_validity_period_is_read_again():
    now = [0.0]
    cache = ResultCache("lru", 10, validity_ms=1500, clock=lambda: now[0])
    cache.put("k", ("old",))
    now[0] = 1.4
    assert cache.get("k") == ("old",)
    now[0] = 1.6
    assert cache.get("k") is None and len(cache) == 0


def test_a_condition_postgresql_refuses_falls_back_to_a_scan(datasources, pg_database, caplog):
    """T.qty * 2000000000 overflows PostgreSQL's integer: the pushed query fails once, the table
    scans instead, and the result is the in-memory table's."""
    datasources({"pg": {"url": pg_database}})
    plan = (
        "@Plan:playback\ndefine stream S (sym string, qty int);\n"
        "define stream Q (sym string, n long);\n{ann}define table T (sym string, qty int);\n"
        "from S insert into T;\n"
        "from Q join T on T.qty * 2000000000 > Q.n select Q.sym, T.sym as t insert into Out;"
    )
    outs = []
    for ann in ("", "@from(eventtable='rdbms', datasource.name='pg', table.name='big')\n"):
        rt = runtime(plan.format(ann=ann))
        got = collect(rt, ["Out"])
        feed(
            rt, [("S", 1, ("a", 1)), ("S", 2, ("b", 3)), ("Q", 3, ("q", 100)), ("Q", 4, ("r", -5))]
        )
        rt.shutdown()
        outs.append([r for _, r in got["Out"]])
    assert outs[0] == outs[1] and outs[0]
    assert "refused a pushed-down condition" in caplog.text
