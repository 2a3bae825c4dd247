"""`@sink(type='rdbms')` against real databases: an SQLite file and a PostgreSQL server the
fixtures start (tests/cep/tables/conftest.py). Insert and upsert, the table created with the
stream's column types, an existing table checked, a refused row left out while its
neighbours are written, rows held while the database refuses connections and written when
it is back, and a datasource its tenant may not use refused."""

import pytest
import sqlalchemy

from cep.model.definitions import Attribute, StreamDefinition
from cep.model.types import AttrType
from cep.policy import PlanPolicyError, check_plan
from cep.policy import HostPolicy
from publishers.exceptions import SinkConfigError, SinkHeldError
from publishers.sink_set import SinkSet
from publishers.sinks import build_sink
from tests.cep.tables.conftest import datasources, pg_database, postgres_url  # noqa: F401

TRADES = StreamDefinition(
    "Trades",
    (
        Attribute("symbol", AttrType.STRING),
        Attribute("price", AttrType.DOUBLE),
        Attribute("volume", AttrType.LONG),
        Attribute("ok", AttrType.BOOL),
    ),
)


def sink(options, definition=TRADES, policy=None, tenant=None):
    return build_sink(
        {"type": "rdbms", "options": options, "definition": definition},
        definition.id,
        policy=policy,
        tenant=tenant,
    )


def rows(url, table, order="symbol"):
    engine = sqlalchemy.create_engine(url)
    try:
        with engine.connect() as c:
            return [
                tuple(r)
                for r in c.execute(
                    sqlalchemy.text(
                        f'select symbol, price, volume, ok from "{table}" order by {order}'
                    )
                )
            ]
    finally:
        engine.dispose()


@pytest.fixture(params=["sqlite", "postgresql"])
def db(request, tmp_path, datasources):  # noqa: F811 - the imported fixture
    """(datasource name, URL) of an SQLite file or a fresh PostgreSQL database."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path}/sink.sqlite"
    else:
        url = request.getfixturevalue("pg_database")
    datasources({"store": {"url": url}})
    return "store", url


EVENTS = [
    (1, ["IBM", 10.5, 100, True]),
    (2, ["WSO2", 20.25, 7, False]),
    (3, ["IBM", 11.0, 5, True]),
]


def test_insert_creates_the_table_with_the_stream_types_and_writes_a_batch(db):
    name, url = db
    s = sink({"datasource": name, "table.name": "trades"})
    s.write_batch(EVENTS)
    assert rows(url, "trades", "volume") == [
        ("IBM", 11.0, 5, True),
        ("WSO2", 20.25, 7, False),
        ("IBM", 10.5, 100, True),
    ]
    engine = sqlalchemy.create_engine(url)
    cols = {c["name"]: c["type"] for c in sqlalchemy.inspect(engine).get_columns("trades")}
    engine.dispose()
    assert isinstance(cols["volume"], sqlalchemy.BigInteger)
    assert isinstance(cols["ok"], sqlalchemy.Boolean) or str(cols["ok"]) == "BOOLEAN"
    assert s.describe()["written"] == 3
    s.close()


def test_upsert_updates_rows_by_key_and_a_key_twice_in_a_batch_keeps_the_last(db):
    name, url = db
    s = sink({"datasource": name, "table.name": "latest", "mode": "upsert", "on.key": "symbol"})
    s.write_batch(EVENTS)
    assert rows(url, "latest") == [("IBM", 11.0, 5, True), ("WSO2", 20.25, 7, False)]
    s.write_batch([(4, ["WSO2", 21.0, 8, True]), (5, ["MSFT", 1.0, 1, False])])
    s.write_batch([(4, ["WSO2", 21.0, 8, True])])  # a replayed result: the same row again
    assert rows(url, "latest") == [
        ("IBM", 11.0, 5, True),
        ("MSFT", 1.0, 1, False),
        ("WSO2", 21.0, 8, True),
    ]
    s.close()


def test_upsert_on_two_key_columns_and_cep40_option_names(db):
    name, url = db
    s = sink(
        {
            "datasource.name": name,
            "table.name": "pairs",
            "execution.mode": "update",
            "update.keys": "symbol, ok",
        }
    )
    s.write_batch([(1, ["A", 1.0, 1, True]), (2, ["A", 2.0, 2, False]), (3, ["A", 3.0, 3, True])])
    assert rows(url, "pairs", "volume") == [("A", 2.0, 2, False), ("A", 3.0, 3, True)]
    s.close()


def test_a_refused_row_is_left_out_and_its_neighbours_are_written(db):
    name, url = db
    s = sink({"datasource": name, "table.name": "keyed", "on.key": "symbol"})  # insert
    s.write_batch([(1, ["IBM", 1.0, 1, True])])
    s.write_batch([(2, ["A", 2.0, 2, True]), (3, ["IBM", 9.0, 9, True]), (4, ["B", 3.0, 3, False])])
    assert rows(url, "keyed") == [("A", 2.0, 2, True), ("B", 3.0, 3, False), ("IBM", 1.0, 1, True)]
    assert s.describe()["bad_rows"] == 1 and s.describe()["written"] == 3
    s.close()


def test_an_existing_table_is_used_and_checked(db):
    name, url = db
    engine = sqlalchemy.create_engine(url)
    with engine.begin() as c:
        c.execute(
            sqlalchemy.text(
                "create table mine (symbol varchar(10), price float, "
                "volume bigint, ok boolean, note varchar(20))"
            )
        )
        c.execute(sqlalchemy.text("create table narrow (symbol varchar(10))"))
    engine.dispose()
    s = sink({"datasource": name, "table.name": "mine"})
    s.write_batch(EVENTS[:1])
    assert rows(url, "mine") == [("IBM", 10.5, 100, True)]
    s.close()
    with pytest.raises(SinkConfigError, match="no column price, volume, ok"):
        sink({"datasource": name, "table.name": "narrow"})
    with pytest.raises(SinkConfigError, match="primary key or unique constraint"):
        sink({"datasource": name, "table.name": "mine", "mode": "upsert", "on.key": "symbol"})


@pytest.mark.parametrize(
    "options,words",
    [
        ({"table.name": "t", "mode": "upsert"}, ["needs on.key"]),
        ({"table.name": "t", "mode": "merge"}, ["mode='merge'", "insert, upsert"]),
        ({"table.name": "t", "on.key": "nope"}, ["'nope'", "symbol, price"]),
        ({"table.name": "t; drop"}, ["plain name"]),
        ({"table.name": "t", "jdbc.url": "jdbc:x"}, ["no option 'jdbc.url'"]),
        ({"table.name": "t", "field.length": "price"}, ["field.length entry 'price'"]),
        ({"datasource": "nowhere", "table.name": "t"}, ["no datasource named 'nowhere'"]),
        ({"table.name": "t", "tabel": "x"}, ["no option 'tabel'", "on.key"]),
    ],
)
def test_bad_options_are_config_errors(datasources, options, words):  # noqa: F811
    datasources()
    with pytest.raises(SinkConfigError) as err:
        sink(options)
    for w in words:
        assert w in str(err.value), (w, str(err.value))


def test_a_tenant_may_only_name_its_datasources(tmp_path, datasources):  # noqa: F811
    datasources({"acme_db": {"url": f"sqlite:///{tmp_path}/a.sqlite", "tenants": ["acme"]}})
    policy = HostPolicy()
    with pytest.raises(SinkConfigError, match="tenant 'globex' may not use datasource"):
        sink({"datasource": "acme_db", "table.name": "t"}, policy=policy, tenant="globex")
    sink({"datasource": "acme_db", "table.name": "t"}, policy=policy, tenant="acme").close()
    import cep

    plan = cep.compile(
        "@Plan:name('P')\ndefine stream S (a int);\n"
        "@sink(type='rdbms', datasource='acme_db', table.name='t')\n"
        "define stream O (a int);\nfrom S select a insert into O;\n"
    )
    with pytest.raises(PlanPolicyError) as err:
        check_plan(plan, policy, "globex")
    assert err.value.line == 3 and "may not use datasource 'acme_db'" in str(err.value)
    check_plan(plan, policy, "acme")


def _allow(admin_url, database, allowed):
    engine = sqlalchemy.create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with engine.connect() as c:
        c.execute(sqlalchemy.text(f'alter database "{database}" allow_connections {allowed}'))
        if not allowed:
            c.execute(
                sqlalchemy.text(
                    "select pg_terminate_backend(pid) from pg_stat_activity where datname = :d"
                ),
                {"d": database},
            )
    engine.dispose()


def test_rows_are_held_while_the_database_is_unreachable_and_written_after(
    datasources, pg_database, postgres_url
):  # noqa: F811
    datasources({"store": {"url": pg_database}})
    database = pg_database.rsplit("/", 1)[1]
    sset = SinkSet("t")
    s = sink(
        {"datasource": "store", "table.name": "held", "retry.interval": "0.2", "max.pending": "4"}
    )
    sset.add("Trades", s)
    sset.dispatch("Trades", EVENTS[:1])
    _allow(postgres_url, database, False)
    try:
        with pytest.raises(SinkHeldError, match="2 rows held"):
            s.write_batch(EVENTS[1:])
        sset.dispatch(
            "Trades",
            [(5, ["X", 5.0, 50, True]), (6, ["Y", 6.0, 60, True]), (7, ["Z", 7.0, 70, False])],
        )
        d = s.describe()
        assert d["pending"] == 4 and d["lost"] == 1 and d["last_error"]  # max.pending 4
        assert sset.metrics()["Trades"]["held"] == 3 and sset.metrics()["Trades"]["failed"] == 0
    finally:
        _allow(postgres_url, database, True)
    deadline = __import__("time").monotonic() + 30
    while s.describe()["pending"] and __import__("time").monotonic() < deadline:
        __import__("time").sleep(0.05)
    assert s.describe()["pending"] == 0 and s.describe()["retries"] >= 1
    # the oldest held row (WSO2) was dropped at max.pending; the rest came in order
    assert rows(pg_database, "held", "volume") == [
        ("IBM", 11.0, 5, True),
        ("X", 5.0, 50, True),
        ("Y", 6.0, 60, True),
        ("Z", 7.0, 70, False),
        ("IBM", 10.5, 100, True),
    ]
    assert s.describe()["written"] == 5
    sset.close()
