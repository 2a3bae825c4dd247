"""A CEP worker *process* in the receiver role for the end-to-end fault tests: it takes events
over HTTP (write-ahead log on) and sends them to a FullSystem's receiver spout; the tests kill
and restart it. Started from the CLI as a user would, without a cluster secret (the
FullSystem's manager has authentication off)."""

import json
import os
import re
import subprocess
import sys
import time
import urllib.request

import pytest

CEP = os.path.join(os.path.dirname(sys.executable), "cep")


def start_receiving_worker(system, state, plan, worker_id):
    """(process, base URL) once the worker's inflow of `plan` (tenant -1234) is connected."""
    proc = subprocess.Popen(
        [
            CEP,
            "worker",
            "--config",
            os.path.join(state, "none.yaml"),
            "--manager",
            f"http://127.0.0.1:{system.server.server_port}",
            "--registry",
            system.manager.registry_url,
            "--id",
            worker_id,
            "--http-port",
            "0",
            "--zmq-port",
            "-1",
            "--host",
            "127.0.0.1",
            "--advertised-host",
            "127.0.0.1",
            "--roles",
            "receiver",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "CEP_WORKER_STATE_DIR": state, "CEP_CLUSTER_SECRET": ""},
    )
    base = re.search(
        r"http://127\.0\.0\.1:\d+", proc.stdout.readline() + proc.stdout.readline()
    ).group(0)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{base}/status", timeout=5) as resp:
                status = json.loads(resp.read())["plans"].get(f"-1234/{plan}") or {}
            if status.get("inflow", {}).get("connected") == 1:
                return proc, base
        except (OSError, ValueError):
            pass
        time.sleep(0.2)
    proc.kill()
    pytest.fail(f"the worker process {worker_id} never connected to {plan}'s receiver spout")
