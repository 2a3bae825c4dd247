"""Harnesses for the manager's tests and benchmarks (package code, so that benchmarks need
nothing from tests/):

- manager *processes*: ``ManagerProc`` runs `cep manager` on fixed free ports (a restart binds
  the same ones), members of a group sharing one Redis store; ``http`` (no redirects
  followed), ``login`` (an admin API token), ``free_port``, ``wait_until``;
- ``FakeLauncher``/``FakeHandle``: a topology launcher that records submits and kills, for fast
  tests of the manager without Spark (the real launcher is tested with Spark).
"""

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

CEP = [sys.executable, "-m", "cep.cli.main"]


def free_port():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http(method, url, body=None, token=None, content_type="application/json", timeout=10):
    """(status, headers, parsed JSON or text) without following redirects."""
    data = body.encode() if isinstance(body, str) else body
    req = urllib.request.Request(
        url,
        data=data,
        method=method,
        headers={
            "Content-Type": content_type,
            **({"Authorization": f"Bearer {token}"} if token else {}),
        },
    )

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None

    opener = urllib.request.build_opener(NoRedirect)
    try:
        with opener.open(req, timeout=timeout) as resp:
            status, headers, text = resp.status, resp.headers, resp.read().decode()
    except urllib.error.HTTPError as exc:
        status, headers, text = exc.code, exc.headers, exc.read().decode(errors="replace")
    try:
        return status, headers, json.loads(text)
    except ValueError:
        return status, headers, text


class ManagerProc:
    """One `cep manager` process of a group; start() again after a kill: same ports, data."""

    def __init__(self, name, root, redis_url, prefix, ttl=3.0, spark_master="embedded", env=None):
        self.name, self.data = name, os.path.join(str(root), name)
        self.http_port, self.registry_port = free_port(), free_port()
        self.url = f"http://127.0.0.1:{self.http_port}"
        self.args = [
            *CEP,
            "manager",
            "--data-dir",
            self.data,
            "--http-host",
            "127.0.0.1",
            "--http-port",
            str(self.http_port),
            "--registry-port",
            str(self.registry_port),
            "--redis-url",
            redis_url,
            "--lease-ttl",
            str(ttl),
            "--advertised-host",
            "127.0.0.1",
            "--spark-master",
            spark_master,
        ]
        self.env = {
            **os.environ,
            "CEP_STORE_REDIS_PREFIX": prefix,
            "CEP_REGISTRY_BIND_HOST": "127.0.0.1",
            **(env or {}),
        }
        self.proc = None
        self.log = os.path.join(str(root), f"{name}.log")

    def start(self, timeout=120):
        with open(self.log, "a") as log:
            self.proc = subprocess.Popen(
                self.args, stdout=subprocess.PIPE, stderr=log, text=True, env=self.env
            )
        line = self.proc.stdout.readline()
        if not line.startswith("CEP manager: REST"):
            raise RuntimeError(
                f"manager {self.name} did not start: {line!r}; log {open(self.log).read()[-3000:]}"
            )
        return self

    def signal(self, sig):
        self.proc.send_signal(sig)

    def kill(self):
        """kill -9, and reap it."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=20)

    def stop(self):
        if self.proc is None or self.proc.poll() is not None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)  # a paused one must run to stop
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()

    def status(self, token, timeout=5):
        return http("GET", self.url + "/api/v1/status", token=token, timeout=timeout)[2]

    def me(self, token, timeout=5):
        """This manager's own row of /api/v1/status (role, leaseHolder, leaseAgeSec, ...)."""
        try:
            doc = self.status(token, timeout)
        except OSError:
            return {}
        if not isinstance(doc, dict):
            return {}
        return next((m for m in doc.get("managers", []) if m.get("self")), {})


def login(url, password, timeout=60):
    """An admin API token, logging in with `password` (retried until the manager answers)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            status, _, body = http(
                "POST",
                url + "/api/v1/login",
                json.dumps({"user": "admin", "password": password, "label": "ha-tests"}),
            )
            if status in (200, 201):
                return body["token"]
        except OSError as exc:
            status, body = None, exc
        if time.monotonic() > deadline:
            raise RuntimeError(f"cannot log in to {url}: {status} {body}")
        time.sleep(0.3)


def wait_until(fn, timeout, interval=0.1):
    """(value, seconds) once fn() is truthy; (last value, None) at the timeout."""
    started = time.monotonic()
    value = None
    while time.monotonic() - started < timeout:
        value = fn()
        if value:
            return value, time.monotonic() - started
        time.sleep(interval)
    return value, None


class FakeHandle:
    def __init__(self, name, launcher):
        self.name = name
        self.run_dir = Path("/fake") / f"{name}-{id(self)}"
        self.state = launcher.initial_state
        self.launcher = launcher

    def status(self):
        return {"name": self.name, "status": self.state, "reason": ""}

    def kill(self, wait_secs=None):
        self.state = "KILLED"
        self.launcher.killed.append(self.name)
        return self.status()


class FakeLauncher:
    """Records submits and kills; new topologies start in `initial_state`."""

    def __init__(self, initial_state="ACTIVE"):
        self.initial_state = initial_state
        self.submitted = []
        self.killed = []
        self.handles = {}
        self.lock = threading.Lock()

    def submit(self, topology):
        with self.lock:
            topology.validate(check_classes=True)
            handle = FakeHandle(topology.name, self)
            self.submitted.append(topology)
            self.handles[topology.name] = handle
            return handle

    def find(self, name):
        h = self.handles.get(name)
        return h if h is not None and h.state not in ("KILLED", "FAILED") else None
