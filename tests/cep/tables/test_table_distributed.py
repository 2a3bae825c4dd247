"""A database table in the distributed mode: the manager ships its datasources to the Siddhi
bolts (a Spark executor has no conf/datasources.yaml of its own), the execution group that
writes the table and the one that joins it share its rows through the database, and a
restarted bolt (a restarted Spark task) finds them there. A cache entry expires after
cache.validity.period, so the reading group sees the writing group's later rows."""

import time

import pytest

from cep.bolt import SiddhiBolt
from manager.server import Manager
from manager.settings import load_manager_settings
from tests.manager.manager_fakes import FakeLauncher
from topology.component import Batch, Collector, Context

PLAN = """@Plan:name('Enrich')
@Import('S:1.0.0')
define stream S (k string, v int);
@Import('Q:1.0.0')
define stream Q (k string);
@Export('Out:1.0.0')
define stream Out (k string, v int);
@from(eventtable='rdbms', datasource.name='shared', table.name='kv', cache='LRU',
       cache.validity.period='100 ms')
@PrimaryKey('k')
define table T (k string, v int);
from S insert into T;
from Q join T on Q.k == T.k select Q.k as k, T.v as v insert into Out;
"""


@pytest.fixture
def manager(tmp_path, datasources):
    datasources({"shared": {"url": f"sqlite:///{tmp_path}/shared.sqlite", "tenants": ["-1234"]}})
    settings = load_manager_settings(
        overrides={
            "manager.data_dir": str(tmp_path / "data"),
            "registry.port": 0,
            "registry.bind_host": "127.0.0.1",
            "manager.advertised_host": "127.0.0.1",
        },
        env={},
    )
    m = Manager(settings, launcher=FakeLauncher()).start()
    yield m
    m.stop()


def _bolt(topo, cid, spec):
    bolt = SiddhiBolt(spec.config)
    bolt.prepare(
        Context(topo.name, cid, 0, spec.parallelism, 0, spec.outputs), Collector(cid, spec.outputs)
    )
    return bolt


def test_groups_share_a_database_table_and_a_restarted_bolt_finds_its_rows(manager, datasources):
    manager.plans.add(-1234, PLAN)
    deadline = time.monotonic() + 10  # the deploy runs on its own thread
    while time.monotonic() < deadline and not manager.launcher.submitted:
        time.sleep(0.02)
    topo = manager.launcher.submitted[-1]
    bolts = {cid: spec for cid, spec in topo.components.items() if "queries" in spec.config}
    writer = next((c, s) for c, s in bolts.items() if "insert into T" in s.config["queries"])
    reader = next((c, s) for c, s in bolts.items() if "join" in s.config["queries"])
    assert writer[0] != reader[0]
    for _, spec in bolts.items():
        assert "sqlite" in spec.config["datasources"]["shared"]["url"]
    datasources({})  # this process's own file no longer has 'shared': only the shipped one does

    w = _bolt(topo, *writer)
    w.execute(Batch([(1000, "a", 1), (1001, "b", 2)], "S", "EventReceiverSpout"))
    w.cleanup()
    for attempt in range(2):  # the reader, then the reader restarted
        r = _bolt(topo, *reader)
        assert r.runtime.tables["T"].all_rows() == [("a", 1), ("b", 2)]
        got = []
        r.runtime.add_callback("Out", got.extend)
        r.execute(Batch([(2000 + attempt, "b"), (2001 + attempt, "z")], "Q", "EventReceiverSpout"))
        assert [row for _, row in got] == [("b", 2)]
        if attempt == 0:
            r.cleanup()
    # the reader has cached that 'z' has no row; the writer adds it
    w = _bolt(topo, *writer)
    w.execute(Batch([(3000, "z", 26)], "S", "EventReceiverSpout"))
    w.cleanup()
    time.sleep(0.2)  # longer than cache.validity.period
    got.clear()
    r.execute(Batch([(3001, "z")], "Q", "EventReceiverSpout"))
    assert [row for _, row in got] == [("z", 26)]
    r.cleanup()
