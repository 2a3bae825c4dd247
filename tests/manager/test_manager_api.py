"""REST API /api/v1 with a real compiler, store and registry, and a fake launcher."""

import time

import pytest

from manager.server import Manager
from manager.settings import load_manager_settings
from manager.web import create_app
from tests.auth_helpers import authorize
from tests.manager.manager_fakes import FakeLauncher
from tests.manager.manager_plans import STAT_PLAN, STAT_XML

SAMPLE = open("conf/samples/StockAnalysis.siddhiql").read()


def wait_state(client, tenant, name, state, timeout=5.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        body = client.get(f"/api/v1/tenants/{tenant}/plans/{name}/status").get_json()
        if body["state"] == state:
            return body
        time.sleep(0.02)
    pytest.fail(f"{name} of {tenant} is {body['state']}, not {state}")


@pytest.fixture
def manager(tmp_path):
    settings = load_manager_settings(
        overrides={
            "manager.data_dir": str(tmp_path),
            "registry.port": 0,
            "registry.bind_host": "127.0.0.1",
            "manager.advertised_host": "127.0.0.1",
        },
        env={},
    )
    m = Manager(settings, launcher=FakeLauncher()).start()
    yield m
    m.stop()


@pytest.fixture
def client(manager):
    client = create_app({"MANAGER": manager, "TESTING": True}).test_client()
    authorize(client, manager)  # issue 10: the super admin's token on every request
    return client


def test_add_list_show_query_plan_status(client, manager, tmp_path):
    resp = client.post("/api/v1/tenants/-1234/plans", data=STAT_PLAN, content_type="text/plain")
    assert resp.status_code == 201, resp.get_json()
    assert resp.get_json()["topology"] == "StatExecutionPlan[-1234]"
    assert (
        tmp_path / "tenants/-1234/executionplans/StatExecutionPlan.siddhiql"
    ).read_text() == STAT_PLAN
    wait_state(client, -1234, "StatExecutionPlan", "ACTIVE")
    listing = client.get("/api/v1/tenants/-1234/plans").get_json()
    assert [p["name"] for p in listing["plans"]] == ["StatExecutionPlan"]
    shown = client.get("/api/v1/tenants/-1234/plans/StatExecutionPlan").get_json()
    assert shown["text"] == STAT_PLAN
    xml = client.get("/api/v1/tenants/-1234/plans/StatExecutionPlan/query-plan")
    assert xml.mimetype == "application/xml" and xml.get_data(as_text=True) == STAT_XML
    status = client.get("/api/v1/tenants/-1234/plans/StatExecutionPlan/status").get_json()
    assert status["outflow"] == {"connected": 0, "required": 3, "text": "0/3 established"}
    assert status["inflow"] == {}
    topo = manager.launcher.submitted[0]
    spout = topo.components["EventReceiverSpout"].config
    assert (spout["registry"], spout["heartbeat_interval"]) == (manager.registry_url, 5.0)


def test_rejected_plan_returns_positions_and_changes_nothing(client, manager, tmp_path):
    bad = SAMPLE.replace("select symbol, price, volume", "select symbol, price, volume,")
    resp = client.post("/api/v1/tenants/-1234/plans", data=bad, content_type="text/plain")
    body = resp.get_json()
    assert resp.status_code == 400 and body["error"] == "PlanRejectedError"
    assert body["line"] > 1 and body["column"] >= 1 and "endLine" in body
    assert body["errors"][0]["message"]
    assert not (tmp_path / "tenants").exists()
    assert manager.launcher.submitted == []
    dist_bad = SAMPLE.replace("execGroup='average'", "execGroup='filter'")
    body = client.post("/api/v1/tenants/-1234/plans", json={"text": dist_bad}).get_json()
    assert "parallel" in body["message"] and body["line"] > 1 and body["errors"]


def test_duplicate_edit_rename_and_remove(client, manager):
    assert client.post("/api/v1/tenants/-1234/plans", data=SAMPLE).status_code == 201
    assert client.post("/api/v1/tenants/-1234/plans", data=SAMPLE).status_code == 409
    wait_state(client, -1234, "StockAnalysis", "ACTIVE")
    edited = SAMPLE.replace("price > 500.0", "price > 600.0")
    assert client.put("/api/v1/tenants/-1234/plans/StockAnalysis", data=edited).status_code == 200
    wait_state(client, -1234, "StockAnalysis", "ACTIVE")
    assert manager.launcher.killed == ["StockAnalysis[-1234]"]
    assert len(manager.launcher.submitted) == 2
    renamed = edited.replace("@Plan:name('StockAnalysis')", "@Plan:name('Stocks2')")
    resp = client.put("/api/v1/tenants/-1234/plans/StockAnalysis", data=renamed)
    assert resp.status_code == 200 and resp.get_json()["name"] == "Stocks2"
    wait_state(client, -1234, "Stocks2", "ACTIVE")
    assert manager.launcher.killed == ["StockAnalysis[-1234]"] * 2
    assert client.get("/api/v1/tenants/-1234/plans/StockAnalysis").status_code == 404
    assert client.delete("/api/v1/tenants/-1234/plans/Stocks2").get_json()["removed"] is True
    assert manager.launcher.killed[-1] == "Stocks2[-1234]"
    assert client.get("/api/v1/tenants/-1234/plans").get_json()["plans"] == []


def test_two_tenants_same_name_and_bad_tenant(client, manager):
    assert client.post("/api/v1/tenants/-1234/plans", data=SAMPLE).status_code == 201
    assert client.post("/api/v1/tenants/7/plans", data=SAMPLE).status_code == 201
    wait_state(client, 7, "StockAnalysis", "ACTIVE")
    assert sorted(t.name for t in manager.launcher.submitted) == [
        "StockAnalysis[-1234]",
        "StockAnalysis[7]",
    ]
    resp = client.get("/api/v1/tenants/super/plans")
    assert resp.status_code == 400 and resp.get_json()["error"] == "BadTenantError"
    assert client.get("/api/v1/nothing").get_json()["error"] == "NotFound"


def test_deployments_etag_and_worker_view(client, manager):
    empty = client.get("/api/v1/deployments")
    assert empty.get_json() == {"version": 0, "plans": []}
    client.post("/api/v1/tenants/-1234/plans", data=SAMPLE)
    resp = client.get("/api/v1/deployments")
    etag = resp.headers["ETag"]
    plan = resp.get_json()["plans"][0]
    assert plan["topology"] == "StockAnalysis[-1234]" and plan["publisherParallelism"] == 1
    # the manager has authentication on: its bolts present the plan's token to the workers
    assert plan["publisherAuth"] == "token"
    assert plan["imported"][0]["stream"] == "StockStream"
    assert plan["imported"][0]["cepStream"] == "StockStream:1.0.0"
    assert plan["imported"][0]["attributes"] == [
        ["symbol", "string"],
        ["price", "double"],
        ["volume", "long"],
    ]
    assert [e["stream"] for e in plan["exported"]] == ["HighPriceStream", "AvgPriceStream"]
    assert client.get("/api/v1/deployments", headers={"If-None-Match": etag}).status_code == 304
    client.post("/api/v1/tenants/5/plans", data=SAMPLE)
    again = client.get("/api/v1/deployments", headers={"If-None-Match": etag})
    assert again.status_code == 200 and again.headers["ETag"] != etag
    assert [
        p["tenant"] for p in client.get("/api/v1/deployments?tenant=5").get_json()["plans"]
    ] == [5]


def test_status_counts_connections_per_worker_id(client, manager):
    from cep.protocol.registry_client import RegistryClient

    client.post("/api/v1/tenants/-1234/plans", data=SAMPLE)
    reg = RegistryClient(manager.registry_url)
    try:
        reg.register(
            "receiver", -1234, "StockAnalysis", "127.0.0.1", 45001, streams=["StockStream"]
        )
        # two workers on one host: CEP 4.0 keyed status by IP and they collided
        for worker, port in (("w1", 46001), ("w2", 46002)):
            reg.register("publisher", -1234, "StockAnalysis", "127.0.0.1", port, worker=worker)
        cid = reg.connect(
            "receiver", -1234, "StockAnalysis", "tcp://127.0.0.1:45001", "w1", "StockStream"
        )
        reg.connect("publisher", -1234, "StockAnalysis", "tcp://127.0.0.1:46001", "bolt:0")
        status = client.get("/api/v1/tenants/-1234/plans/StockAnalysis/status").get_json()
        assert {w: s["text"] for w, s in status["inflow"].items()} == {
            "w1": "1/1 established",
            "w2": "0/1 established",
        }
        assert status["outflow"]["text"] == "1/1 established"
        reg.release(cid)  # recomputed live: the released connection is gone at once
        status = client.get("/api/v1/tenants/-1234/plans/StockAnalysis/status").get_json()
        assert status["inflow"]["w1"]["text"] == "0/1 established"
        with pytest.raises(Exception, match="UnknownPlan|no execution plan"):
            reg.register("receiver", -1234, "NoSuchPlan", "127.0.0.1", 45002, streams=["S"])
    finally:
        reg.close()


def test_create_app_builds_its_own_manager(tmp_path):
    app = create_app(
        {
            "SETTINGS": {
                "manager.data_dir": str(tmp_path),
                "registry.port": 0,
                "registry.bind_host": "127.0.0.1",
                "spark.master": "embedded",
            }
        }
    )
    try:
        client = app.test_client()
        authorize(client, app.config["MANAGER"])
        info = client.get("/api/v1/manager").get_json()
        assert info["store"] == "files" and info["registryPort"] > 0
    finally:
        app.config["MANAGER"].stop()


def test_query_plan_logged_at_debug_by_topology_manager_logger(client, caplog):
    import logging

    with caplog.at_level(logging.DEBUG, logger="manager.topology_manager"):
        client.post("/api/v1/tenants/-1234/plans", data=STAT_PLAN)
    records = [
        r
        for r in caplog.records
        if r.name == "manager.topology_manager"
        and r.levelno == logging.DEBUG
        and "Query plan of" in r.getMessage()
    ]
    assert records and records[0].getMessage().endswith(STAT_XML)


@pytest.mark.parametrize(
    "text,message,line",
    [
        ("define stream S (a int);", "@Plan:name('...') is mandatory", 1),
        ("\n@Plan:name('../etc')\ndefine stream S (a int);", "contains whitespaces", 2),
    ],
)
def test_plan_name_rules_with_positions(client, text, message, line):
    resp = client.post("/api/v1/tenants/-1234/plans", data=text)
    body = resp.get_json()
    assert resp.status_code == 400 and message in body["message"] and body["line"] == line
