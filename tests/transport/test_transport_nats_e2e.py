"""The NATS JetStream transport end to end with real parts: a nats-server started here, a
manager with `topology.transport: nats` on its embedded Spark cluster (receiver spout, Siddhi
bolt, publisher bolt: benchmarks/pipeline_bench.FullSystem), a worker without a write-ahead
log. Events go in through the worker's HTTP receiver and out through its sink, counted by
sequence number; the Siddhi bolt's task is killed with SIGKILL mid-stream. Afterwards every
event the worker accepted is at the sink exactly once: the spout resumes at its checkpoint's
stream sequence, and the replayed results are recognised by their identity."""
import json
import os
import shutil
import signal
import threading
import time
import urllib.error
import urllib.request

import pytest

from benchmarks.pipeline_bench import FullSystem
from publishers.base import Sink
from tests.connectors.servers import start_nats

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
    body = json.dumps([{"timestamp": 1_700_000_000_000 + i, "data": ["IBM", 1.0, i]}
                       for i in range(lo, hi)]).encode()
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


def test_siddhi_bolt_killed_mid_stream_loses_and_duplicates_no_accepted_event(tmp_path):
    if shutil.which("java") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("java is required for this e2e test (CI=true)")
        pytest.skip("java is not installed: the embedded Spark cluster cannot start")
    nats = start_nats(tmp_path / "nats")
    brokers = [f"bus={nats.url}"]
    system = None
    try:
        system = FullSystem(str(tmp_path), checkpoint_interval=1.0, wal=False,
                            manager={"topology.transport": "nats",
                                     "topology.nats_connection": "bus",
                                     "connections.brokers": brokers},
                            worker={"connections.brokers": brokers})
        plan = system.worker.plans[(-1234, "BenchFilter")]
        assert type(plan.service).__name__ == "NatsPublisherService"
        sink = Volumes()
        plan.service.sink_set.add("Out", sink)
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
        poll(lambda: len(set(sink.seen)) > 0
             and ((handle.status().get("checkpoints") or {}).get("last") or {})
             .get("id", 0) >= 2, 120, "output and two complete checkpoints")
        restarts = handle.status()["restarts"]
        os.kill(siddhi_pid(handle), signal.SIGKILL)
        killed_with = len(set(sink.seen))
        sender.join(300)
        poll(lambda: handle.status()["restarts"] > restarts
             and handle.status()["status"] == "ACTIVE", 180, "the stage restarted")
        poll(lambda: len(set(sink.seen)) >= len(accepted), 120,
             f"all {len(accepted)} accepted events at the sink")
        time.sleep(3.0)  # two more checkpoints: a duplicate would arrive now
        status = handle.status()
        assert len(accepted) == 20000  # the topology's restart never refused an event
        assert killed_with < 20000  # the kill came mid-stream
        assert status["checkpoints"]["restored_from"] >= 2
        assert sorted(sink.seen) == accepted, (
            f"{len(sink.seen)} at the sink, {len(set(sink.seen))} distinct, "
            f"{len(accepted)} accepted; service {plan.service.metrics()}")
        print(f"restored from {status['checkpoints']['restored_from']}; "
              f"{plan.service.metrics()['duplicates']} replayed results dropped as duplicates")
    finally:
        if system is not None:
            system.close()
        nats.stop()
