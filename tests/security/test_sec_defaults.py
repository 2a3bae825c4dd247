"""Secure defaults: the manager's REST API and every worker listener bind loopback unless
configured; binding beyond loopback logs a warning; a loopback worker advertises 127.0.0.1."""

import logging

from cep.cli.manager import _warn_if_exposed
from cep.worker.config import load_config
from cep.worker.node import Worker
from manager.settings import load_manager_settings


def test_default_binds_are_loopback(tmp_path):
    m = load_manager_settings(conf_dir=tmp_path, env={})
    assert m["http.host"] == "127.0.0.1"
    w = load_config(path=tmp_path / "none.yaml", env={})
    assert (w["receivers.http_host"], w["receivers.zmq_host"]) == ("127.0.0.1", "127.0.0.1")
    shipped = load_config(env={})  # conf/worker.yaml as shipped
    assert shipped["receivers.http_host"] == "127.0.0.1"
    assert load_manager_settings(env={})["http.host"] == "127.0.0.1"


def test_worker_listens_on_loopback_and_advertises_it(tmp_path, caplog):
    cfg = load_config(
        path=tmp_path / "none.yaml",
        env={},
        overrides={
            "worker.mode": "standalone",
            "receivers.http_port": 0,
            "receivers.zmq_port": 0,
            "worker.state_dir": str(tmp_path / "state"),
        },
    )
    with caplog.at_level(logging.WARNING):
        worker = Worker(cfg).start()
    try:
        assert worker.http._server.server.socket.getsockname()[0] == "127.0.0.1"
        assert worker.zmq_url.startswith("tcp://127.0.0.1:")
        assert worker.identity.host == "127.0.0.1"
        assert "not loopback" not in caplog.text
    finally:
        worker.stop()


def test_worker_beyond_loopback_warns(tmp_path, caplog):
    cfg = load_config(
        path=tmp_path / "none.yaml",
        env={},
        overrides={
            "worker.mode": "standalone",
            "receivers.http_port": 0,
            "receivers.zmq_port": -1,
            "receivers.http_host": "0.0.0.0",
            "worker.state_dir": str(tmp_path / "state"),
        },
    )
    with caplog.at_level(logging.WARNING):
        worker = Worker(cfg)
    assert "receivers.http_host is 0.0.0.0, not loopback" in caplog.text
    worker.http.stop()


def test_manager_without_auth_beyond_loopback_needs_insecure_and_warns(caplog):
    def settings(**kw):
        return load_manager_settings(overrides=kw, env={})

    with caplog.at_level(logging.WARNING, logger="manager"):
        assert _warn_if_exposed(settings(**{"http.host": "0.0.0.0"})) is None  # auth on
        assert caplog.text == ""
        refused = _warn_if_exposed(settings(**{"http.host": "0.0.0.0", "security.auth": False}))
        assert "refusing to start" in refused and "--insecure" in refused
        assert (
            _warn_if_exposed(
                settings(
                    **{"http.host": "0.0.0.0", "security.auth": False, "security.insecure": True}
                )
            )
            is None
        )
    assert "INSECURE: authentication is off" in caplog.text


def test_the_manager_and_worker_servers_are_production_servers_with_security_headers(tmp_path):
    """cheroot (a thread pool, timeouts), a `Server` header with no version, and on the
    manager the console's CSP, framing, referrer and sniffing headers."""
    import urllib.request

    from cep.protocol.http_server import ProductionServer
    from manager.server import Manager
    from manager.web import create_app

    cfg = load_config(
        path=tmp_path / "none.yaml",
        env={},
        overrides={
            "worker.mode": "standalone",
            "receivers.http_port": 0,
            "receivers.zmq_port": -1,
            "worker.state_dir": str(tmp_path / "state"),
        },
    )
    worker = Worker(cfg).start()
    manager = Manager(
        load_manager_settings(
            overrides={
                "manager.data_dir": str(tmp_path / "m"),
                "registry.port": 0,
                "registry.bind_host": "127.0.0.1",
            },
            env={},
        )
    ).start()
    server = ProductionServer(create_app({"MANAGER": manager}), "127.0.0.1", 0).start()
    try:
        with urllib.request.urlopen(f"{worker.http_url}/health", timeout=5) as resp:
            assert resp.headers["Server"] == "sparkcep"
        with urllib.request.urlopen(
            f"http://127.0.0.1:{server.port}/console/login", timeout=5
        ) as resp:
            headers = resp.headers
        assert headers["Server"] == "sparkcep"  # no framework or Python version
        assert "frame-ancestors 'none'" in headers["Content-Security-Policy"]
        assert "script-src 'self'" in headers["Content-Security-Policy"]
        assert headers["X-Frame-Options"] == "DENY"
        assert headers["Referrer-Policy"] == "no-referrer"
        assert headers["X-Content-Type-Options"] == "nosniff"
    finally:
        server.stop()
        manager.stop()
        worker.stop()
