"""The NATS JetStream transport end to end with real parts: a nats-server started here, a
manager with `topology.transport: nats` on its embedded Spark cluster (receiver spout, Siddhi
bolt, publisher bolt: benchmarks/pipeline_bench.FullSystem), a worker without a write-ahead
log. Events go in through the worker's HTTP receiver and out through its sink, counted by
sequence number. First the Siddhi bolt's task is killed with SIGKILL mid-stream: afterwards
every event the worker accepted is at the sink exactly once (the spout resumes at its
checkpoint's stream sequence, the replayed results are recognised by their identity). Then a
second worker process, in the receiver role and without a write-ahead log, is killed with
SIGKILL mid-stream and started again: every event it answered 200 for is at the sink exactly
once (JetStream kept them). One system for the module, the tests in this order."""

import json
import os
import re
import shutil
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request

import pytest

from benchmarks.pipeline_bench import FullSystem
from publishers.base import Sink
from tests.connectors.servers import start_nats
from tests.receiving_worker import CEP

pytestmark = pytest.mark.slow
URL = "/events/-1234/BenchFilter/StockStream"


class Volumes(Sink):
    type = "volumes"

    def __init__(self):
        super().__init__("Out", {})
        self.seen = []

    def write_batch(self, events):
        self.seen.extend(row[2] for _, row in events)


def post(base, lo, hi):
    body = json.dumps(
        [{"timestamp": 1_700_000_000_000 + i, "data": ["IBM", 1.0, i]} for i in range(lo, hi)]
    ).encode()
    req = urllib.request.Request(base + URL, body, {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return json.loads(resp.read())["accepted"] if resp.status == 200 else 0
    except (urllib.error.URLError, OSError):
        return 0  # refused: nothing of this request counts as accepted


def poll(cond, timeout, what):
    deadline = time.monotonic() + timeout
    while True:
        value = cond()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.2)


def siddhi_pid(handle):
    spec = json.loads((handle.run_dir / "spec.json").read_text())
    cid = next(c["id"] for c in spec["components"] if c["class"].endswith(":SiddhiBolt"))
    return handle.metrics()["components"][cid]["instances"][0]["pid"]


@pytest.fixture(scope="module")
def system(tmp_path_factory):
    if shutil.which("java") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("java is required for this e2e test (CI=true)")
        pytest.skip("java is not installed: the embedded Spark cluster cannot start")
    root = tmp_path_factory.mktemp("nats-e2e")
    nats = start_nats(root / "nats")
    brokers = [f"bus={nats.url}"]
    system = None
    try:
        system = FullSystem(
            str(root),
            checkpoint_interval=1.0,
            wal=False,
            manager={
                "topology.transport": "nats",
                "topology.nats_connection": "bus",
                "connections.brokers": brokers,
            },
            worker={"connections.brokers": brokers},
        )
        plan = system.worker.plans[(-1234, "BenchFilter")]
        sink = Volumes()
        plan.service.sink_set.add("Out", sink)
        system.nats, system.sink, system.root = nats, sink, root
        yield system
    finally:
        if system is not None:
            system.close()
        nats.stop()


def test_siddhi_bolt_killed_mid_stream_loses_and_duplicates_no_accepted_event(system):
    plan = system.worker.plans[(-1234, "BenchFilter")]
    assert type(plan.service).__name__ == "NatsPublisherService"
    sink = system.sink
    base = system.worker.http_url
    handle = system.manager.plans.topologies.deployments[(-1234, "BenchFilter")].handle
    accepted, posted = [], threading.Event()

    def send():  # 80 requests of 250 events, about 20 a second, while the kill happens
        for k in range(80):
            got = post(base, k * 250, k * 250 + 250)
            accepted.extend(range(k * 250, k * 250 + got))
            if k == 39:
                posted.set()
            time.sleep(0.05)

    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    poll(posted.is_set, 120, "half of the requests posted")
    poll(
        lambda: (
            len(set(sink.seen)) > 0
            and ((handle.status().get("checkpoints") or {}).get("last") or {}).get("id", 0) >= 2
        ),
        120,
        "output and two complete checkpoints",
    )
    restarts = handle.status()["restarts"]
    os.kill(siddhi_pid(handle), signal.SIGKILL)
    killed_with = len(set(sink.seen))
    sender.join(300)
    poll(
        lambda: handle.status()["restarts"] > restarts and handle.status()["status"] == "ACTIVE",
        180,
        "the stage restarted",
    )
    poll(
        lambda: len(set(sink.seen)) >= len(accepted),
        120,
        f"all {len(accepted)} accepted events at the sink",
    )
    time.sleep(3.0)  # two more checkpoints: a duplicate would arrive now
    status = handle.status()
    assert len(accepted) == 20000  # the topology's restart never refused an event
    assert killed_with < 20000  # the kill came mid-stream
    assert status["checkpoints"]["restored_from"] >= 2
    assert sorted(sink.seen) == accepted, (
        f"{len(sink.seen)} at the sink, {len(set(sink.seen))} distinct, "
        f"{len(accepted)} accepted; service {plan.service.metrics()}"
    )
    print(
        f"restored from {status['checkpoints']['restored_from']}; "
        f"{plan.service.metrics()['duplicates']} replayed results dropped as duplicates"
    )


def start_receiver(system, state):
    """A `cep worker` process in the receiver role, NATS connection `bus`, no write-ahead
    log; (process, base URL) once its inflow is connected."""
    os.makedirs(state, exist_ok=True)
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
            "w-nats",
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
        env={
            **os.environ,
            "CEP_WORKER_STATE_DIR": state,
            "CEP_CLUSTER_SECRET": "",
            "CEP_WAL_ENABLED": "false",
            "CEP_CONNECTIONS_BROKERS": f"bus={system.nats.url}",
        },
    )
    base = re.search(
        r"http://127\.0\.0\.1:\d+", proc.stdout.readline() + proc.stdout.readline()
    ).group(0)

    def connected():
        try:
            with urllib.request.urlopen(f"{base}/status", timeout=5) as resp:
                plan = json.loads(resp.read())["plans"].get("-1234/BenchFilter") or {}
            return plan.get("inflow", {}).get("connected") == 1
        except (OSError, ValueError):
            return False

    try:
        poll(connected, 120, "the worker process's NATS inflow")
    except BaseException:
        proc.kill()
        raise
    return proc, base


def test_a_worker_killed_mid_stream_without_a_log_loses_no_accepted_event(system):
    sink, first = system.sink, 100_000  # volumes above the first test's
    before = len(sink.seen)
    state = str(system.root / "w-nats")
    proc, base = start_receiver(system, state)
    procs, accepted, n = [proc], [], first
    try:
        for k in range(40):  # 40 requests of 500 events, SIGKILL after the 20th
            got = post(base, n, n + 500)
            accepted.extend(range(n, n + got))
            n += 500
            if k == 19:
                proc.send_signal(signal.SIGKILL)
                proc.wait(timeout=10)
                proc, base = start_receiver(system, state)
                procs.append(proc)
        poll(
            lambda: len(set(sink.seen[before:])) >= len(accepted),
            120,
            f"all {len(accepted)} accepted events at the sink",
        )
        time.sleep(2.0)  # duplicates would arrive now
        assert len(accepted) == 20000  # every request before and after the kill answered 200
        assert sorted(sink.seen[before:]) == accepted, (
            f"{len(sink.seen) - before} at the sink, {len(accepted)} accepted"
        )
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGKILL)
                p.wait(timeout=10)
