"""A standalone worker runs a plan whose output streams go to `@sink(type='rdbms')`: events
posted over HTTP go through the engine into a table of an SQLite file and, upserted by key,
into a table of a real PostgreSQL server (started by tests/cep/tables/conftest.py); a plan
naming a datasource its tenant may not use is refused at deploy."""

import sqlalchemy

from tests.cep.tables.conftest import datasources, pg_database, postgres_url  # noqa: F401
from tests.worker.test_worker_standalone import make_worker, post, wait_for

PLAN = """@Plan:name('Rows')
define stream Trades (symbol string, price double, volume long);
@sink(type='rdbms', datasource='local', table.name='big_trades')
define stream Big (symbol string, price double, volume long);
@sink(type='rdbms', datasource='pg', table.name='latest', mode='upsert', on.key='symbol')
define stream Latest (symbol string, price double);
from Trades[volume >= 100] select symbol, price, volume insert into Big;
from Trades select symbol, price insert into Latest;
"""


def table(url, sql):
    engine = sqlalchemy.create_engine(url)
    try:
        with engine.connect() as c:
            return [tuple(r) for r in c.execute(sqlalchemy.text(sql))]
    except sqlalchemy.exc.OperationalError:  # not created yet
        return None
    finally:
        engine.dispose()


def test_worker_writes_output_rows_to_sqlite_and_upserts_into_postgresql(
    tmp_path, datasources, pg_database
):  # noqa: F811
    local = f"sqlite:///{tmp_path}/rows.sqlite"
    datasources({"local": {"url": local}, "pg": {"url": pg_database}})
    plan = tmp_path / "rows.siddhiql"
    plan.write_text(PLAN)
    w = make_worker(tmp_path, [str(plan)]).start()
    try:
        assert wait_for(lambda: "-1234/Rows" in w.status()["plans"])
        url = f"{w.http_url}/events/-1234/Rows/Trades"
        post(url, [["IBM", 10.0, 100], ["WSO2", 5.0, 10], ["IBM", 11.0, 5]])
        post(url, [["WSO2", 6.5, 300], ["IBM", 12.0, 1]])
        big = "select symbol, price, volume from big_trades order by volume"
        assert wait_for(lambda: table(local, big) == [("IBM", 10.0, 100), ("WSO2", 6.5, 300)])
        latest = "select symbol, price from latest order by symbol"
        assert wait_for(lambda: table(pg_database, latest) == [("IBM", 12.0), ("WSO2", 6.5)])
    finally:
        w.stop()


def test_a_datasource_of_another_tenant_keeps_the_plan_from_deploying(tmp_path, datasources):  # noqa: F811
    datasources({"theirs": {"url": f"sqlite:///{tmp_path}/t.sqlite", "tenants": ["acme"]}})
    plan = tmp_path / "p.siddhiql"
    plan.write_text(
        "@Plan:name('P') define stream S (a int);\n"
        "@sink(type='rdbms', datasource='theirs', table.name='t')\n"
        "define stream O (a int); from S select a insert into O;"
    )
    w = make_worker(tmp_path, [str(plan)]).start()
    try:
        assert wait_for(lambda: "may not use datasource 'theirs'" in str(w.status()))
        assert "-1234/P" not in w.status()["plans"]
    finally:
        w.stop()
