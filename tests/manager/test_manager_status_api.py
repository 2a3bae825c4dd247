"""The issue 9 REST additions with a real compiler, store and registry and a fake launcher:
POST /api/v1/validate, the richer plans list, /topology, /metrics windows from recorded
samples, /status and /workers, and the Spark snapshot asked at most once a second."""

import threading
import time

import pytest

from manager.metrics_history import MetricsHistory
from manager.spark_status import SparkStatus
from tests.manager.manager_plans import STAT_PLAN
from tests.manager.test_manager_api import SAMPLE, client, manager, wait_state  # noqa: F401

BAD_ATTR = "@Plan:name('Bad')\ndefine stream S (a int);\nfrom S select b\ninsert into T;\n"
PARTITION_DIST = """@Plan:name('Dist')
define stream S (k string, v int);
partition with (k of S)
begin
  @dist(parallel='2') from S select k, v insert into T;
end;
"""


def test_validate_returns_positioned_compiler_errors_and_stores_nothing(client, manager):
    body = client.post("/api/v1/validate", data=BAD_ATTR, content_type="text/plain").get_json()
    assert body["valid"] is False and body["name"] == "Bad"
    err = body["errors"][0]
    assert (err["error"], err["line"], err["column"], err["endLine"], err["endColumn"]) == (
        "UnknownAttributeError",
        3,
        15,
        3,
        16,
    )
    assert "'b'" in err["message"]
    assert client.get("/api/v1/tenants/-1234/plans").get_json()["plans"] == []


def test_validate_applies_the_distributed_mode_checks_of_add(client):
    checked = client.post("/api/v1/validate", json={"text": PARTITION_DIST}).get_json()
    added = client.post(
        "/api/v1/tenants/-1234/plans", data=PARTITION_DIST, content_type="text/plain"
    )
    assert added.status_code == 400 and checked["valid"] is False
    assert [e["message"] for e in checked["errors"]] == [
        e["message"] for e in added.get_json()["errors"]
    ]
    assert checked["errors"][0]["line"] == added.get_json()["line"]


def test_validate_valid_plan_and_unreadable_body(client):
    body = client.post("/api/v1/validate", data=SAMPLE, content_type="text/plain").get_json()
    assert body == {"valid": True, "name": "StockAnalysis", "errors": []}
    empty = client.post("/api/v1/validate", data="  ", content_type="text/plain").get_json()
    assert empty["valid"] is False
    assert empty["errors"][0]["message"] == "the execution plan is empty"
    bad = client.post("/api/v1/validate", json=["not", "a", "map"])
    assert bad.status_code == 400 and bad.get_json()["error"] == "PlanRejectedError"


def test_plans_list_has_description_version_last_change_status_text(client):
    client.post("/api/v1/tenants/-1234/plans", data=SAMPLE, content_type="text/plain")
    wait_state(client, -1234, "StockAnalysis", "ACTIVE")
    [item] = client.get("/api/v1/tenants/-1234/plans").get_json()["plans"]
    assert item["description"].startswith("Flags expensive trades")
    assert item["version"] == 1 and item["lastChange"].endswith("Z")
    assert item["status"]["state"] == "ACTIVE"
    assert item["statusText"] == (
        "Storm topology : ACTIVE\nInflow connections : no receivers "
        "found\nOutflow connections : 0/1 established"
    )
    first = item["lastChange"]
    time.sleep(0.01)
    client.put("/api/v1/tenants/-1234/plans/StockAnalysis", data=SAMPLE, content_type="text/plain")
    [item] = client.get("/api/v1/tenants/-1234/plans").get_json()["plans"]
    assert item["version"] == 2 and item["lastChange"] > first


def test_topology_graph_of_a_plan(client):
    client.post("/api/v1/tenants/-1234/plans", data=STAT_PLAN, content_type="text/plain")
    graph = client.get("/api/v1/tenants/-1234/plans/StatExecutionPlan/topology").get_json()
    assert graph["topology"] == "StatExecutionPlan[-1234]"
    comps = {c["id"]: c for c in graph["components"]}
    assert comps["EventReceiverSpout"]["kind"] == "spout"
    assert comps["EventReceiverSpout"]["role"] == "receiver"
    assert comps["EventReceiverSpout"]["parallelism"] == 2
    assert comps["EventPublisherBolt"]["parallelism"] == 3
    assert {c["role"] for c in comps.values()} == {"receiver", "siddhi", "publisher"}
    fields = [e for e in graph["edges"] if e["grouping"] == "fields"]
    assert fields and fields[0]["fields"] == ["userID"] and fields[0]["parallelism"] == 2
    for e in graph["edges"]:
        assert e["from"] in comps and e["to"] in comps
    unknown = client.get("/api/v1/tenants/-1234/plans/Nope/topology")
    assert unknown.status_code == 404 and unknown.get_json()["error"] == "PlanNotFoundError"


def components(executed, emitted, sent, failed=0, error=None):
    """A handle.metrics()["components"] of spout -> filter (one instance each)."""
    spout = {
        "component": "EventReceiverSpout",
        "index": 0,
        "task": 0,
        "emitted": emitted,
        "transferred": sent,
        "executed": 0,
        "failed": 0,
        "acked": 0,
        "capacity": 0.0,
        "execute_latency_ms": 0.0,
        "sent_to": {"1": sent},
        "input_queue_depth": 0,
    }
    bolt = {
        "component": "filter",
        "index": 0,
        "task": 1,
        "emitted": executed // 2,
        "transferred": 0,
        "executed": executed,
        "failed": failed,
        "acked": 0,
        "capacity": 0.5,
        "execute_latency_ms": 2.0,
        "sent_to": {},
        "input_queue_depth": 3,
        "last_error": error,
    }

    def comp(i):
        return {
            **{
                k: i[k]
                for k in (
                    "emitted",
                    "transferred",
                    "executed",
                    "failed",
                    "acked",
                    "capacity",
                    "execute_latency_ms",
                    "input_queue_depth",
                )
            },
            "instances": [i],
        }

    return {"EventReceiverSpout": comp(spout), "filter": comp(bolt)}


def test_metrics_windows_from_recorded_samples(client, manager):
    client.post("/api/v1/tenants/-1234/plans", data=SAMPLE, content_type="text/plain")
    now = time.time()
    key = (-1234, "StockAnalysis")
    manager.history.record(key, components(0, 0, 0), uptime_s=0, now=now - 7200)
    manager.history.record(key, components(1000, 1000, 1000), now=now - 1200)
    manager.history.record(key, components(1600, 1600, 1600), now=now - 60)
    err = {"time": now - 30, "where": "execute", "error": "ValueError: bad row"}
    restarted = components(200, 200, 200, failed=2, error=err)  # counters back from 0
    manager.history.record(key, restarted, now=now)
    url = "/api/v1/tenants/-1234/plans/StockAnalysis/metrics"
    ten = client.get(url + "?window=10m").get_json()
    three = client.get(url + "?window=3h").get_json()
    by = {w: {c["id"]: c for c in doc["components"]} for w, doc in (("10m", ten), ("3h", three))}
    assert by["10m"]["filter"]["executed"] == 200 + 1600 - 1000  # since the sample 20 min ago
    assert by["3h"]["filter"]["executed"] == 1800 and by["3h"]["filter"]["failed"] == 2
    assert by["10m"]["filter"]["executeLatencyMs"] == 2.0
    assert 0 < by["3h"]["filter"]["capacity"] <= 1
    assert by["10m"]["EventPublisherBolt"]["executed"] == 0  # in the graph, no samples yet
    edge = [e for e in ten["edges"] if (e["from"], e["to"]) == ("EventReceiverSpout", "filter")]
    assert edge[0]["ratePerSec"] == pytest.approx(800 / 1200, abs=0.01)
    assert ten["recentErrors"] == [
        {
            "time": now - 30,
            "component": "filter",
            "instance": 0,
            "message": "execute: ValueError: bad row",
        }
    ]
    assert by["10m"]["filter"]["errors"] == 1
    bad = client.get(url + "?window=5m")
    assert bad.status_code == 400 and "10m, 3h, 1d, all" in bad.get_json()["message"]


def test_history_memory_is_bounded_whatever_the_uptime():
    history = MetricsHistory()
    start = 1_000_000.0
    for i in range(2 * 24 * 360):  # two days of 10 s samples
        history.record(("t", "p"), components(i, i, i), now=start + 10 * i)
    tiers = history.series[("t", "p")].tiers
    assert sum(len(t) for t in tiers) < 500
    day = history.window(("t", "p"), "1d")["components"]["filter"]["executed"]
    assert day == pytest.approx(24 * 360, rel=0.01)


def test_status_and_workers_documents(client, manager):
    client.post("/api/v1/tenants/-1234/plans", data=SAMPLE, content_type="text/plain")
    wait_state(client, -1234, "StockAnalysis", "ACTIVE")
    manager.registry.table.report_worker(
        {
            "worker": "w9",
            "host": "h",
            "url": "http://h:1",
            "roles": ["receiver"],
            "plans": ["-1234/StockAnalysis"],
            "eventsIn": 10,
            "eventsOut": 0,
            "cpuPercent": 1.5,
            "memoryRssBytes": 1000,
        }
    )
    doc = client.get("/api/v1/status").get_json()
    assert set(doc) == {"managers", "spark", "topologies", "workers", "endpoints", "flows"}
    assert doc["managers"][0]["role"] == "leader" and doc["managers"][0]["self"] is True
    assert doc["managers"][0]["registry"] == manager.registry_url
    assert doc["topologies"][0]["topology"] == "StockAnalysis[-1234]"
    assert doc["topologies"][0]["state"] == "ACTIVE"
    assert doc["spark"]["alive"] is False  # the fake launcher has no cluster
    [w] = client.get("/api/v1/workers").get_json()["workers"]
    assert (w["id"], w["url"], w["plans"], w["stale"]) == (
        "w9",
        "http://h:1",
        ["-1234/StockAnalysis"],
        False,
    )
    assert doc["workers"] == [w]


def test_spark_master_asked_at_most_once_a_second_by_any_number_of_callers():
    calls = []

    def fetch(ui_url, timeout):
        calls.append(time.monotonic())
        time.sleep(0.05)  # a slow master: concurrent callers wait for the one fetch
        return {
            "status": "ALIVE",
            "cores": 16,
            "coresused": 3,
            "activeapps": [{"id": "app-1", "name": "P[-1234]", "state": "RUNNING", "cores": 3}],
        }

    spark = SparkStatus(lambda: ("spark://m:7077", "http://m:8080"), fetch)
    threads = [
        threading.Thread(target=lambda: [spark.snapshot() for _ in range(20)]) for _ in range(8)
    ]
    start = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - start
    assert len(calls) <= int(elapsed) + 1
    snap = spark.snapshot()
    assert (snap["slotsUsed"], snap["slotsTotal"], snap["alive"]) == (3, 16, True)
    assert snap["applications"][0]["id"] == "app-1"


def test_latency_histogram_series_leave_with_their_plan(manager):
    from prometheus_client import generate_latest

    a, b = (-1234, "A"), (-1234, "B")
    for key in (a, b):
        manager.history.record(key, components(10, 10, 10))
        manager.metrics.observe(key, components(10, 10, 10))
    text = generate_latest(manager.metrics.registry).decode()
    assert 'plan="A"' in text and 'plan="B"' in text
    manager.history.forget(a)  # what the sampler does once a plan is no longer deployed
    manager.metrics.observe(b, components(20, 20, 20))
    text = generate_latest(manager.metrics.registry).decode()
    assert 'plan="A"' not in text and "cep_component_execute_latency_seconds_count{" in text
    status = manager.sampler
    assert status.last_error is None


def test_sampler_skips_a_topology_that_answers_badly_and_forgets_removed_plans():
    from types import SimpleNamespace

    from manager.metrics_sampler import MetricsSampler

    class Handle:
        def __init__(self, answer):
            self.answer = answer

        def metrics(self):
            if isinstance(self.answer, Exception):
                raise self.answer
            return self.answer

    good = {"status": {"status": "ACTIVE", "uptime_s": 5.0}, "components": components(4, 4, 4)}
    deps = {
        (1, "Bad"): SimpleNamespace(handle=Handle(ValueError("garbled")), phase="SUBMITTED"),
        (1, "Good"): SimpleNamespace(handle=Handle(good), phase="SUBMITTED"),
        (1, "Starting"): SimpleNamespace(handle=None, phase="DEPLOYING"),
    }
    history = MetricsHistory()
    history.record((1, "Removed"), components(1, 1, 1))
    sampler = MetricsSampler(SimpleNamespace(deployments=deps), history)
    sampler.sample_all()
    assert sorted(history.keys()) == [(1, "Good")] and sampler.samples == 1
    assert history.window((1, "Good"), "all")["components"]["filter"]["executed"] == 4
