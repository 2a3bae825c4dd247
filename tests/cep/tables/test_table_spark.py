"""A database table on the real embedded Spark cluster: the manager ships its datasources to
the plan's Spark tasks, a task opens the operator's SQLite table and the plan's join enriches
events with its rows (slow: starts a Spark cluster)."""

import os
import shutil

import pytest
import sqlalchemy

from manager.server import Manager
from manager.settings import load_manager_settings
from tests.manager.test_manager_spark import (
    kill_all_topologies,
    next_output,
    stand_in_worker,
    wait_state,
)
from topology.cluster import stop_cluster

pytestmark = pytest.mark.slow

PLAN = """@Plan:name('Enrich')
@Plan:dist(receiverParallelism='1', publisherParallelism='1')
@Import('TradeStream:1.0.0')
define stream TradeStream (symbol string, price double, volume long);
@Export('Named:1.0.0')
define stream Named (symbol string, name string, volume long);
@from(eventtable='rdbms', datasource.name='refdata', table.name='company', cache='LRU')
@PrimaryKey('symbol')
define table Company (symbol string, name string);
@info(name='enrich') @dist(parallel='1')
from TradeStream join Company on TradeStream.symbol == Company.symbol
select TradeStream.symbol as symbol, Company.name as name, TradeStream.volume as volume
insert into Named;
"""


@pytest.fixture
def launcher(tmp_path_factory):
    if shutil.which("java") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("java is required for the Spark tests (CI=true)")
        pytest.skip("java is not installed: the embedded Spark cluster cannot start")
    from manager.launcher import SparkLauncher

    launcher = SparkLauncher(
        {
            "spark.state_dir": str(tmp_path_factory.mktemp("tbl-spark")),
            "spark.slots": 4,
            "spark.worker_memory": "2g",
            "spark.host": "127.0.0.1",
            "topology.kill_wait_secs": 1.0,
            "topology.metrics_interval_s": 0.5,
        }
    )
    launcher.cluster()
    yield launcher
    kill_all_topologies(launcher)
    stop_cluster(launcher.settings)


def test_a_spark_task_joins_the_operators_database_table(tmp_path, datasources, launcher):
    db = tmp_path / "refdata.sqlite"
    engine = sqlalchemy.create_engine(f"sqlite:///{db}")
    with engine.begin() as c:  # the operator's reference data, in a table of its own making
        c.execute(sqlalchemy.text("create table company (symbol text primary key, name text)"))
        c.execute(
            sqlalchemy.text(
                "insert into company values ('IBM', 'International "
                "Business Machines'), ('WSO2', 'WSO2 Inc.')"
            )
        )
    engine.dispose()
    datasources({"refdata": {"url": f"sqlite:///{db}", "tenants": ["-1234"]}})
    settings = load_manager_settings(
        overrides={
            "manager.data_dir": str(tmp_path / "data"),
            "registry.port": 0,
            "registry.bind_host": "127.0.0.1",
            "manager.advertised_host": "127.0.0.1",
            "registry.heartbeat_interval": 1.0,
            "topology.kill_wait_secs": 1.0,
        },
        env={},
    )
    manager = Manager(settings, launcher=launcher).start()
    try:
        manager.plans.add(-1234, PLAN)
        wait_state(manager, -1234, "Enrich", "ACTIVE")
        reg, pull, push, _ = stand_in_worker(manager, -1234, "Enrich")
        try:
            from cep.protocol.frames import encode_batch

            push.send(
                encode_batch(
                    "TradeStream",
                    [[1, ["IBM", 10.0, 500]], [2, ["X", 1.0, 5]], [3, ["WSO2", 2.5, 101]]],
                )
            )
            assert next_output(pull) == (
                "Named",
                [
                    [1, ["IBM", "International Business Machines", 500]],
                    [3, ["WSO2", "WSO2 Inc.", 101]],
                ],
            )
        finally:
            push.close(0)
            pull.close(0)
            reg.close()
        manager.plans.remove(-1234, "Enrich")
    finally:
        manager.stop()
