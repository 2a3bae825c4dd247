"""Workers and the manager over real HTTP and real ZeroMQ (fake Spark launcher): a worker given
only the manager's REST URL learns the registry address from GET /api/v1/manager (the
registry is on a free port, not 8904), reports itself with worker-info messages
(GET /api/v1/workers, /api/v1/status), goes stale when it stops; both /metrics endpoints
parse with prometheus_client's parser; the worker's JSON counters are at /metrics.json."""

import json
import os
import threading
import urllib.error
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families
from werkzeug.serving import make_server

from cep.worker.config import load_config
from cep.worker.node import Worker
from manager.server import Manager
from manager.settings import load_manager_settings
from manager.web import create_app
from tests.manager.manager_fakes import FakeLauncher
from tests.manager.manager_helpers import poll

SAMPLE = open("conf/samples/StockAnalysis.siddhiql").read()


def get(url, raw=False, headers=None):
    req = urllib.request.Request(url, headers=headers or {})
    with urllib.request.urlopen(req, timeout=5) as resp:
        body = resp.read().decode()
        return body if raw else json.loads(body)


def api(manager, path, raw=False):
    """GET a path of the served manager, with an admin token when authentication is on."""
    return get(manager.url + path, raw, manager.headers)


def auth_headers(manager):
    """An admin API token's header when the manager has authentication, else none."""
    auth = getattr(manager, "auth", None)
    return {"Authorization": f"Bearer {auth.create_token('admin', 'tests')[0]}"} if auth else {}


@pytest.fixture
def served_manager(tmp_path):
    """A manager with a fake launcher, REST on a free port, registry on another free port."""
    settings = load_manager_settings(
        overrides={
            "manager.data_dir": str(tmp_path / "mgr"),
            "registry.port": 0,
            "registry.bind_host": "127.0.0.1",
            "manager.advertised_host": "127.0.0.1",
            "registry.liveness": 3.0,
            "registry.heartbeat_interval": 0.2,
        },
        env={},
    )
    manager = Manager(settings, launcher=FakeLauncher()).start()
    server = make_server("127.0.0.1", 0, create_app({"MANAGER": manager}), threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    manager.url = f"http://127.0.0.1:{server.server_port}"
    manager.headers = auth_headers(manager)
    yield manager
    server.shutdown()
    manager.stop()


def start_worker(manager_url, tmp_path, wid="w1"):
    cfg = load_config(
        path=tmp_path / "none.yaml",
        env={},
        overrides={
            "worker.id": wid,
            "worker.mode": "distributed",
            "worker.advertised_host": "127.0.0.1",
            "managers.urls": [manager_url],
            "managers.poll_interval": 0.2,
            "managers.timeout": 1.0,
            "receivers.http_host": "127.0.0.1",
            "receivers.http_port": 0,
            "receivers.zmq_host": "127.0.0.1",
            "receivers.zmq_port": 0,
            "transport.reconnect_interval": 0.1,
            "transport.heartbeat_interval": 0.2,
            "sinks.default": "file",
            "sinks.dir": str(tmp_path / "out"),
            "worker.state_dir": str(tmp_path / "state"),
        },
    )
    return Worker(cfg).start()


def workers_by_id(manager):
    return {w["id"]: w for w in api(manager, "/api/v1/workers")["workers"]}


def test_worker_finds_a_registry_on_a_non_default_port_and_reports_itself(served_manager, tmp_path):
    m = served_manager
    assert m.registry.port != 8904
    m.plans.add(-1234, SAMPLE)
    w = start_worker(m.url, tmp_path)
    try:
        info = poll(lambda: workers_by_id(m).get("w1"), 10, 0.1, "w1 in /api/v1/workers")
        assert w.registry.url == m.registry_url  # learned from GET /api/v1/manager
        assert (info["url"], info["host"], info["stale"]) == (w.http_url, "127.0.0.1", False)
        assert info["roles"] == ["receiver", "publisher"] and info["memoryRssBytes"] > 0
        info = poll(
            lambda: workers_by_id(m)["w1"]["plans"] and workers_by_id(m)["w1"],
            10,
            0.1,
            "w1 serving the plan",
        )
        assert info["plans"] == ["-1234/StockAnalysis"]
        status = api(m, "/api/v1/status")
        assert [x["id"] for x in status["workers"]] == ["w1"]
        pubs = poll(
            lambda: [e for e in api(m, "/api/v1/status")["endpoints"] if e["kind"] == "publisher"],
            10,
            0.1,
            "publisher endpoint",
        )
        assert (pubs[0]["worker"], pubs[0]["stale"], pubs[0]["plan"]) == (
            "w1",
            False,
            "StockAnalysis",
        )
        accepted = _post_events(w, 3)
        assert accepted == 3
        poll(lambda: workers_by_id(m)["w1"]["eventsIn"] == 3, 10, 0.1, "eventsIn reported")
    finally:
        w.stop()
    gone = poll(
        lambda: workers_by_id(m)["w1"]["stale"] and workers_by_id(m)["w1"],
        10,
        0.1,
        "w1 stale after it stopped",
    )
    assert gone["heartbeatAgeSec"] >= m.registry.table.liveness  # rounded to 0.1 s


def _post_events(worker, n):
    body = "\n".join(json.dumps({"data": ["IBM", 10.0 + i, 5]}) for i in range(n))
    req = urllib.request.Request(
        f"{worker.http_url}/events/-1234/StockAnalysis/StockStream",
        data=body.encode(),
        method="POST",
    )
    with urllib.request.urlopen(req, timeout=5) as resp:
        return json.loads(resp.read())["accepted"]


def families(text):
    return {f.name: f for f in text_string_to_metric_families(text)}


def test_prometheus_endpoints_of_manager_and_worker_parse(served_manager, tmp_path):
    m = served_manager
    m.plans.add(-1234, SAMPLE)
    w = start_worker(m.url, tmp_path)
    try:
        poll(lambda: "-1234/StockAnalysis" in w.status()["plans"], 10, 0.1, "plan deployed")
        assert _post_events(w, 4) == 4
        # the worker's metrics name every tenant: a super admin's token (checked with the
        # manager) or the cluster secret, nothing else
        for path in ("/metrics", "/status", "/events"):
            with pytest.raises(urllib.error.HTTPError) as refused:
                get(w.http_url + path, raw=True)
            assert refused.value.code == 401
        if getattr(m, "auth", None) is not None:
            m.auth.directory.add_tenant(7, "seven")
            m.auth.directory.add_user("v7", "viewer-7-password", 7, "viewer")
            viewer = {"Authorization": f"Bearer {m.auth.create_token('v7', 't')[0]}"}
            with pytest.raises(urllib.error.HTTPError) as refused:
                get(w.http_url + "/metrics", raw=True, headers=viewer)
            assert refused.value.code == 401
        assert get(w.http_url + "/health")["ok"] is True  # always open
        assert "plans" in get(
            w.http_url + "/status",
            headers={"X-CEP-Cluster-Secret": os.environ["CEP_CLUSTER_SECRET"]},
        )
        fams = families(get(w.http_url + "/metrics", raw=True, headers=m.headers))
        accepted = fams["cep_worker_receiver_events_accepted"]
        assert accepted.type == "counter"
        sample = [s for s in accepted.samples if s.name.endswith("_total")][0]
        assert (
            sample.labels
            == {"worker": "w1", "tenant": "-1234", "plan": "StockAnalysis", "stream": "StockStream"}
            and sample.value == 4
        )
        assert "cep_worker_inflow_buffered_events" in fams
        assert "cep_worker_publisher_events_received" in fams
        legacy = get(w.http_url + "/metrics.json", headers=m.headers)
        assert legacy["receivers"]["streams"]["-1234/StockAnalysis/StockStream"]["accepted"] == 4
        poll(lambda: workers_by_id(m).get("w1"), 10, 0.1, "w1 reported")
        mfams = families(api(m, "/metrics", raw=True))
        state = mfams["cep_topology_state"].samples
        assert [(s.labels["plan"], s.labels["state"], s.value) for s in state] == [
            ("StockAnalysis", "ACTIVE", 1.0)
        ]
        workers = {s.labels["stale"]: s.value for s in mfams["cep_workers"].samples}
        assert workers == {"false": 1.0, "true": 0.0}
        assert mfams["cep_component_execute_latency_seconds"].type == "histogram"
    finally:
        w.stop()
