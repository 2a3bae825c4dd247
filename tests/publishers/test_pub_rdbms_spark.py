"""`@sink(type='rdbms')` behind a topology on the real embedded Spark cluster: events posted
to the worker go through the spout, a Siddhi bolt and the publisher bolt, and the worker's
sinks write them as rows of a PostgreSQL table (upsert by id) and of an SQLite table
(insert). The Siddhi bolt is killed with SIGKILL mid-stream: the checkpointed delivery
replays, so every accepted id is in both tables (at least once in the insert table, exactly
once in the upsert table). Slow: a Spark cluster and a PostgreSQL server."""

import threading
import time

import pytest
import sqlalchemy

from tests.cep.tables.conftest import datasources, pg_database, postgres_url  # noqa: F401
from tests.connectors.flow import handle, kill_task, start_system
from tests.worker.test_worker_standalone import post

pytestmark = pytest.mark.slow

PLAN = """@Plan:name('RowFlow')
@Import('Ticks:1.0.0')
define stream Ticks (id long, price double);
@Export('Latest:1.0.0')
@sink(type='rdbms', datasource='pg', table.name='latest', mode='upsert', on.key='id')
define stream Latest (id long, price double);
@Export('Every:1.0.0')
@sink(type='rdbms', datasource='local', table.name='every_row')
define stream Every (id long, price double);
@dist(parallel='1', execGroup='rows')
from Ticks select id, price insert into Latest;
@dist(parallel='1', execGroup='rows')
from Ticks select id, price * 2 as price insert into Every;
"""


def ids(url, sql):
    engine = sqlalchemy.create_engine(url)
    try:
        with engine.connect() as c:
            return [r[0] for r in c.execute(sqlalchemy.text(sql))]
    except sqlalchemy.exc.SQLAlchemyError:  # the table is not there yet
        return []
    finally:
        engine.dispose()


def test_rows_written_through_a_spark_topology_survive_a_killed_bolt(
    tmp_path, datasources, pg_database
):  # noqa: F811
    local = f"sqlite:///{tmp_path}/rows.sqlite"
    datasources({"pg": {"url": pg_database}, "local": {"url": local}})
    system = start_system(tmp_path / "sys", PLAN, [])
    accepted, stop = [], threading.Event()

    def send():
        url, n = f"{system.worker.http_url}/events/-1234/RowFlow/Ticks", 0
        while not stop.is_set():
            batch = list(range(n, n + 50))
            try:
                reply = post(url, [[i, 1.0] for i in batch])
            except OSError:  # not accepted: not counted
                reply = {}
            if reply.get("accepted") == len(batch):
                accepted.extend(batch)
            n += 50
            time.sleep(0.05)

    sender = threading.Thread(target=send, daemon=True)
    try:
        sender.start()
        deadline = time.monotonic() + 120
        while not ids(pg_database, "select id from latest") and time.monotonic() < deadline:
            time.sleep(0.2)
        assert ids(pg_database, "select id from latest"), "no row reached PostgreSQL"
        restarts = kill_task(system, "siddhi")
        deadline = time.monotonic() + 120
        while handle(system).status()["restarts"] <= restarts and time.monotonic() < deadline:
            time.sleep(0.2)
        assert handle(system).status()["restarts"] > restarts, "the killed bolt never restarted"
        time.sleep(2.0)
        stop.set()
        sender.join(30)
        want = set(accepted)
        assert len(want) > 100
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            got_pg = ids(pg_database, "select id from latest")
            got_local = ids(local, "select id from every_row")
            if want <= set(got_pg) and want <= set(got_local):
                break
            time.sleep(0.5)
        assert not want - set(got_pg), sorted(want - set(got_pg))[:10]
        assert not want - set(got_local), sorted(want - set(got_local))[:10]
        assert len(got_pg) == len(set(got_pg))  # upsert: one row per id, replays included
        prices = ids(local, "select distinct price from every_row")
        assert prices == [2.0]
    finally:
        stop.set()
        system.close()
