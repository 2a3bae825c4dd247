"""Helpers of the HA pair tests: two standalone workers (in-process or as `cep worker`
processes) that name each other as peer, with short intervals."""

import json
import socket
import time
import urllib.error
import urllib.request

import pytest

from cep.security import cluster_secret

PLAN = """@Plan:name('HaPlan')
define stream S (k string, v long);
@info(name='sums')
from S#window.length(5) select k, sum(v) as total group by k insert into Out;
@info(name='big')
from S[v > 90] select k, v insert into Big;
"""
KEY = "-1234/HaPlan"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(cond, timeout=60.0, step=0.05):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = cond()
        if value:
            return value
        time.sleep(step)
    return cond()


def events(start, n, keys=3):
    """n events with increasing timestamps (playback), values cycling 0..99."""
    return [
        {"timestamp": 1_000 + i, "data": [f"k{i % keys}", (i * 7) % 100]}
        for i in range(start, start + n)
    ]


def post(url, evs, timeout=5.0):
    """(status, body) of POST /events; status 0 when the node does not answer."""
    req = urllib.request.Request(
        f"{url}/events/-1234/HaPlan/S",
        data=json.dumps(evs).encode(),
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")
    except OSError:
        return 0, {}


def get_json(url, secret=None, timeout=3.0):
    headers = {cluster_secret.HEADER: secret} if secret else {}
    req = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")
    except OSError:
        return 0, {}


def ha_status(url):
    code, body = get_json(f"{url}/status")
    return body.get("ha") if code == 200 else None


def role_of(url):
    s = ha_status(url)
    return s and s["role"]


def read_outputs(path):
    """{stream: [(timestamp, data tuple), ...]} from JSON-lines sink files."""
    out = {}
    for line in open(path, encoding="utf-8").read().splitlines() if path.exists() else []:
        rec = json.loads(line)
        out.setdefault(rec["stream"], []).append((rec["timestamp"], tuple(rec["data"])))
    return out


def expected_outputs(evs, plan=PLAN):
    """What `cep run --playback` gives for the events: {stream: [(ts, data), ...]}."""
    import cep
    from cep.engine.runtime import ExecutionPlanRuntime

    rt = ExecutionPlanRuntime(cep.compile(plan), playback=True)
    out = {}
    for stream in ("Out", "Big"):
        rt.add_callback(
            stream,
            lambda e, s=stream: out.setdefault(s, []).extend((ts, tuple(row)) for ts, row in e),
        )
    rt.input_handler("S").send_batch([(e["timestamp"], tuple(e["data"])) for e in evs])
    rt.shutdown()
    return out


@pytest.fixture
def plan_file(tmp_path):
    path = tmp_path / "ha-plan.siddhiql"
    path.write_text(PLAN)
    return path


class WorkerProcess:
    """`cep worker --mode standalone --ha-peer ...` as a process of its own (kill -9-able)."""

    def __init__(self, tmp_path, name, port, peer_port, plan_file, forward=False, env=None):
        import os
        import sys

        self.name, self.port, self.url = name, port, f"http://127.0.0.1:{port}"
        self.cmd = [
            os.path.join(os.path.dirname(sys.executable), "cep"),
            "worker",
            "--mode",
            "standalone",
            "--plan",
            str(plan_file),
            "--id",
            name,
            "--http-port",
            str(port),
            "--zmq-port",
            "-1",
            "--ha-peer",
            f"http://127.0.0.1:{peer_port}",
        ] + (["--ha-forward"] if forward else [])
        self.env = {
            **os.environ,
            "CEP_HA_SYNC_INTERVAL": "0.5",
            "CEP_HA_FAILOVER_S": "3.0",
            "CEP_SINKS_DEFAULT": "file",
            "CEP_SINKS_DIR": str(tmp_path / "sinks"),
            "CEP_WORKER_STATE_DIR": str(tmp_path / f"state-{name}"),
            "CEP_MANAGERS_POLL_INTERVAL": "0.2",
            **(env or {}),
        }
        self.log = tmp_path / f"worker-{name}.log"
        self.proc = None

    def start(self):
        import subprocess

        self.proc = subprocess.Popen(
            self.cmd, env=self.env, stdout=open(self.log, "ab"), stderr=subprocess.STDOUT
        )
        return self

    def kill(self):
        """kill -9, and wait until the process is gone."""
        import signal

        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except Exception:  # noqa: BLE001 - it did not stop in time
                self.kill()


@pytest.fixture
def own_redis(tmp_path):
    """A redis-server of this test's own, so that the test can stop it."""
    import subprocess

    from tests.conftest import require_binary

    binary = require_binary("redis-server", "the HA lease test talks to a real redis-server")
    port = free_port()
    proc = subprocess.Popen(
        [
            binary,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(tmp_path),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    import redis

    client = redis.Redis(port=port)
    assert wait_for(lambda: _pings(client), 10)
    yield proc, f"redis://127.0.0.1:{port}/0", client
    proc.kill()
    proc.wait()


def _pings(client):
    try:
        return client.ping()
    except Exception:  # noqa: BLE001 - not up yet
        return False
