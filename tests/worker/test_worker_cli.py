"""`cep worker` as a real process: flags override settings, bad settings fail clearly, SIGINT
stops it cleanly; and the settings layering (yaml < env < flags)."""

import os
import re
import signal
import subprocess
import sys
import time

import pytest

from cep.worker.config import load_config
from cep.worker.exceptions import WorkerConfigError

CEP = os.path.join(os.path.dirname(sys.executable), "cep")


def test_settings_layer_yaml_env_flags(tmp_path):
    conf = tmp_path / "worker.yaml"
    conf.write_text(
        "receivers:\n  http_port: 9100\n  zmq_port: 9101\n"
        "worker:\n  id: from-yaml\n  mode: standalone\n"
    )
    cfg = load_config(
        path=conf,
        env={"CEP_RECEIVERS_HTTP_PORT": "9200", "CEP_HTTP_PORT": "1"},
        overrides={"worker.id": "from-flag", "managers.urls": "http://a:1,http://b:2"},
    )
    assert cfg["receivers.http_port"] == 9200  # the manager's CEP_HTTP_PORT is not ours
    assert cfg.source("receivers.http_port") == "CEP_RECEIVERS_HTTP_PORT"
    assert cfg["receivers.zmq_port"] == 9101 and cfg.source("receivers.zmq_port").endswith(".yaml")
    assert cfg["worker.id"] == "from-flag" and cfg["worker.mode"] == "standalone"
    assert cfg["managers.urls"] == ["http://a:1", "http://b:2"]


@pytest.mark.parametrize(
    "overrides, fragment",
    [
        ({"worker.mode": "cluster"}, "is not one of distributed, standalone"),
        ({"worker.roles": "receiver,janitor"}, "must name receiver and/or publisher"),
        ({"managers.poll_interval": 30}, "must be in (0, 5]"),
        ({"managers.registries": "tcp://a:1,tcp://b:2"}, "give one per manager"),
        ({"receivers.http_port": "eighty"}, "setting receivers.http_port: 'eighty'"),
    ],
)
def test_bad_settings_name_the_setting(tmp_path, overrides, fragment):
    with pytest.raises(WorkerConfigError) as exc:
        load_config(path=tmp_path / "none.yaml", env={}, overrides=overrides)
    assert fragment in str(exc.value)


def test_cli_starts_reports_urls_and_stops_on_sigint(fake_manager, tmp_path):
    proc = subprocess.Popen(
        [
            CEP,
            "worker",
            "--config",
            str(tmp_path / "none.yaml"),
            "--manager",
            fake_manager.url,
            "--registry",
            "tcp://127.0.0.1:1",
            "--id",
            "cli-w",
            "--http-port",
            "0",
            "--zmq-port",
            "0",
            "--host",
            "127.0.0.1",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "CEP_WORKER_STATE_DIR": str(tmp_path / "state")},
    )
    try:
        first = proc.stdout.readline()
        assert "worker cli-w (distributed) up" in first, (
            proc.stderr.read() if proc.poll() else first
        )
        lines = [proc.stdout.readline() for _ in range(3)]
        assert re.search(r"POST http://127\.0\.0\.1:\d+/events/<tenant>/<plan>/<stream>", lines[0])
        assert "PUSH to tcp://127.0.0.1:" in lines[1]
        time.sleep(0.5)
        assert fake_manager.requests >= 1  # it polled the manager for deployments
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()


def test_cli_bad_setting_exits_1_with_reason(tmp_path):
    out = subprocess.run(
        [
            CEP,
            "worker",
            "--config",
            str(tmp_path / "none.yaml"),
            "--mode",
            "standalone",
            "--http-port",
            "0",
            "--roles",
            "cook",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 1 and "must name receiver and/or publisher" in out.stderr
