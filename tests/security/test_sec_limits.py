"""Run-time limits: an in-memory table keeps at most limits.table_rows rows (the rest are
refused, counted and logged) in a real standalone worker; and a plan that needs more slots
than the cluster has says so (cores needed vs the cluster's)."""

import json
import time
import urllib.request

from cep.engine.table.store import Table
from cep.worker.config import load_config
from cep.worker.node import Worker
from topology.driver import partial_slots_reason, slots_reason

import cep

PLAN = """@Plan:name('Tab')
define stream S (k string, v int);
define table T (k string, v int);
from S select k, v insert into T;
"""
KEYED = PLAN.replace("define table", "@PrimaryKey('k')\ndefine table")


def test_table_rows_capped_in_a_standalone_worker(tmp_path, caplog):
    plan = tmp_path / "tab.siddhiql"
    plan.write_text(PLAN)
    cfg = load_config(
        path=tmp_path / "none.yaml",
        env={},
        overrides={
            "worker.mode": "standalone",
            "standalone.plans": [str(plan)],
            "managers.poll_interval": 0.2,
            "receivers.http_port": 0,
            "receivers.zmq_port": -1,
            "limits.table_rows": 3,
            "worker.state_dir": str(tmp_path / "state"),
        },
    )
    worker = Worker(cfg).start()
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and "-1234/Tab" not in worker.status()["plans"]:
            time.sleep(0.05)
        body = json.dumps([{"data": [f"k{i}", i]} for i in range(5)]).encode()
        req = urllib.request.Request(
            f"{worker.http_url}/events/-1234/Tab/S", data=body, method="POST"
        )
        with urllib.request.urlopen(req, timeout=5) as resp:
            assert json.loads(resp.read())["accepted"] == 5  # accepted by the receiver...
        table = worker.plans[(-1234, "Tab")].runtime.tables["T"]
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and table.refused < 2:
            time.sleep(0.02)
        assert len(table) == 3 and table.refused == 2  # ...but the table keeps only 3
        assert "table T is full (3 rows, limits.table_rows)" in caplog.text
    finally:
        worker.stop()


def test_keyed_table_updates_existing_keys_when_full():
    plan = cep.compile(KEYED)
    table = Table(plan.tables[0])
    table.max_rows = 2
    table.insert([("a", 1), ("b", 2), ("c", 3)])
    assert table.all_rows() == [("a", 1), ("b", 2)] and table.refused == 1
    table.insert([("a", 10), ("d", 4)])
    assert table.all_rows() == [("a", 10), ("b", 2)] and table.refused == 2


def test_unlimited_by_default():
    table = Table(cep.compile(PLAN).tables[0])
    table.insert([(str(i), i) for i in range(1000)])
    assert len(table) == 1000 and table.refused == 0


def test_slots_reason_names_cores_needed_and_available():
    assert slots_reason(3, 8, 6) == "needs 3 free slots (cores); the cluster has 8, 2 free"
    assert slots_reason(20, 16, 0) == (
        "needs 20 free slots (cores); the cluster has 16, 16 free: more than the whole cluster, "
        "so it waits until workers with 4 more cores join (spark.slots) or its @dist parallel "
        "is lowered"
    )
    assert slots_reason(3, None, None) == "needs 3 free slots"
    assert partial_slots_reason(6, 4, 4, 4) == (
        "needs 6 slots (cores), has 4: 2 more must free up or join; the cluster has 4, 0 free"
    )


DIST_PLAN = """@Plan:name('Tab')
@Import('S:1.0.0')
define stream S (k string, v int);
define table T (k string, v int);
@Export('O:1.0.0')
define stream O (k string, v int);
from S select k, v insert into T;
from S select k, v insert into O;
"""


def test_manager_carries_table_rows_to_the_siddhi_bolts(manager):
    """limits.table_rows of the manager (50 here) reaches every Siddhi bolt of the plan's
    topology, and the bolt's runtime enforces it."""
    from cep.bolt import SiddhiBolt
    from topology.component import Batch, Collector, Context

    manager.plans.add(-1234, DIST_PLAN)
    deadline = time.monotonic() + 10  # the deploy runs on its own thread
    while time.monotonic() < deadline and not manager.launcher.submitted:
        time.sleep(0.02)
    topo = manager.launcher.submitted[-1]
    bolts = {cid: spec for cid, spec in topo.components.items() if "queries" in spec.config}
    assert bolts and all(s.config["table_rows"] == 50 for s in bolts.values())
    cid, spec = next(
        (c, s) for c, s in bolts.items() if "define table" in s.config["table_definitions"]
    )
    bolt = SiddhiBolt(spec.config)
    bolt.prepare(
        Context(topo.name, cid, 0, spec.parallelism, 0, spec.outputs), Collector(cid, spec.outputs)
    )
    try:
        bolt.execute(Batch([(1000 + i, f"k{i}", i) for i in range(60)], "S", "EventReceiverSpout"))
        table = bolt.runtime.tables["T"]
        assert len(table) == 50 and table.refused == 10
    finally:
        bolt.cleanup()


def test_console_try_it_applies_the_limits(client):
    """The console's try-it runs plans in the manager's process: the same window limits
    apply there (limits.window_length is 10,000 in these tests)."""
    plan = (
        "@Plan:name('T')\ndefine stream S (a int);\n"
        "from S#window.length(20000) select a insert into O;\n"
    )
    event = '{"stream": "S", "timestamp": 1000, "data": [1]}\n'
    resp = client.post("/api/v1/try", json={"plan": plan, "events": event})
    body = resp.get_json()
    assert resp.status_code == 200 and body["events"] == [], body
    assert "limits.window_length" in body["errors"][0]["message"]
    assert body["errors"][0]["line"] == 3
    ok = client.post(
        "/api/v1/try", json={"plan": plan.replace("20000", "2"), "events": event}
    ).get_json()
    assert ok["errors"] == [] and len(ok["events"]) == 1
