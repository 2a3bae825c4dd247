"""Issue 10: a real worker syncs plans from a real manager over HTTP only with the manager's
cluster secret; without it (or with another) it gets 401 and serves nothing."""

import threading

import pytest
from werkzeug.serving import make_server

from cep.security import cluster_secret
from cep.worker.config import load_config
from cep.worker.node import Worker
from manager.server import Manager
from manager.settings import load_manager_settings
from manager.web import create_app
from tests.auth_helpers import authorize
from tests.manager.manager_fakes import FakeLauncher
from tests.manager.manager_helpers import poll

SAMPLE = open("conf/samples/StockAnalysis.siddhiql").read()


@pytest.fixture
def served(tmp_path, monkeypatch):
    """A manager whose cluster secret is the one it generated in its data dir."""
    monkeypatch.delenv("CEP_CLUSTER_SECRET")
    settings = load_manager_settings(
        overrides={
            "manager.data_dir": str(tmp_path / "mgr"),
            "registry.port": 0,
            "registry.bind_host": "127.0.0.1",
            "manager.advertised_host": "127.0.0.1",
        },
        env={},
    )
    manager = Manager(settings, launcher=FakeLauncher()).start()
    app = create_app({"MANAGER": manager})
    client = app.test_client()
    authorize(client, manager)
    assert (
        client.post(
            "/api/v1/tenants/-1234/plans", data=SAMPLE, content_type="text/plain"
        ).status_code
        == 201
    )
    server = make_server("127.0.0.1", 0, app, threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    manager.url = f"http://127.0.0.1:{server.server_port}"
    yield manager
    server.shutdown()
    manager.stop()


def worker(manager, tmp_path, secret_file=""):
    cfg = load_config(
        path=tmp_path / "none.yaml",
        env={},
        overrides={
            "worker.id": "w1",
            "worker.mode": "distributed",
            "managers.urls": [manager.url],
            "managers.registries": [manager.registry_url],
            "managers.poll_interval": 0.2,
            "managers.timeout": 5.0,
            "managers.cluster_secret_file": secret_file,
            "receivers.http_port": 0,
            "receivers.zmq_port": -1,
            "worker.state_dir": str(tmp_path / "state"),
        },
    )
    return Worker(cfg).start()


def test_a_worker_without_the_secret_gets_401_and_no_plans(served, tmp_path):
    generated = cluster_secret.secret_path(served.auth.data_dir)
    wrong = tmp_path / "wrong-secret"
    wrong.write_text("not-the-secret\n")
    for secret_file in ("", str(wrong)):
        w = worker(served, tmp_path, secret_file)
        try:
            poll(
                lambda: "HTTP 401" in (w.sync.describe()["last_error"] or ""),
                20,
                0.1,
                "the manager's 401 in the worker's sync status",
            )
            assert w.plans == {}
        finally:
            w.stop()
    w = worker(served, tmp_path, str(generated))
    try:
        poll(lambda: "-1234/StockAnalysis" in w.status()["plans"], 20, 0.1, "the plan synced")
        assert w.sync.describe()["last_error"] is None
    finally:
        w.stop()
