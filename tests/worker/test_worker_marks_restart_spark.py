"""On a real topology (manager, embedded Spark cluster, receiver spout, Siddhi bolt, publisher
bolt): the CEP worker process that writes the plan's output is killed with SIGKILL after its
sink took every result, and started again on its state dir; then a task of the topology is
killed, so the stage restarts and replays its results from the start (no checkpoint completed
yet). With `delivery.marks: off` the same run writes the first 2,000 results twice (checked by
hand: 4,500 rows for 2,500 results, no duplicate reported). The restarted worker recognises every replayed result from its duplicate marks on disk
(`delivery.marks`, default fsync): the sink holds each result once, and the worker reports the
replay as duplicates. Slow: a real Spark cluster."""

import collections
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.request

import pytest

from benchmarks.pipeline_bench import FULL_PLAN, FullSystem

pytestmark = pytest.mark.slow
CEP = os.path.join(os.path.dirname(sys.executable), "cep")
NAME = "MarksFilter"
PLAN = FULL_PLAN.replace("'BenchFilter'", f"'{NAME}'")
FIRST, LATER = 2000, 500  # results before the kills, and after


class MarksSystem(FullSystem):
    """The FullSystem with its in-process worker in the receiver role only, and the plan's
    publisher in a worker process of its own (`cep worker --roles publisher`)."""

    def __init__(self, root):
        self.root, self.pub = str(root), None
        super().__init__(
            self.root,
            checkpoint_interval=600.0,  # none completes: a restart replays from the start
            plan=PLAN,
            spark={"topology.max_restarts": 100},
            worker={"worker.roles": ["receiver"]},
        )

    def _wait_active(self, timeout=600):
        if self.pub is None:  # the manager is up: the publisher can join before the plan runs
            self.pub, self.pub_base = self.start_publisher()
        super()._wait_active(timeout)

    def start_publisher(self):
        proc = subprocess.Popen(
            [
                CEP,
                "worker",
                "--config",
                os.path.join(self.root, "none.yaml"),
                "--manager",
                f"http://127.0.0.1:{self.server.server_port}",
                "--registry",
                self.manager.registry_url,
                "--id",
                "w-pub",
                "--http-port",
                "0",
                "--zmq-port",
                "-1",
                "--host",
                "127.0.0.1",
                "--advertised-host",
                "127.0.0.1",
                "--roles",
                "publisher",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env={
                **os.environ,
                "CEP_WORKER_STATE_DIR": os.path.join(self.root, "w-pub"),
                "CEP_CLUSTER_SECRET": "",  # the manager's authentication is off
                "CEP_SINKS_DEFAULT": "file",
                "CEP_SINKS_DIR": os.path.join(self.root, "out"),
                "CEP_DELIVERY_MARKS": "fsync",  # the default, whatever this shell sets
            },
        )
        base = re.search(
            r"http://127\.0\.0\.1:\d+", proc.stdout.readline() + proc.stdout.readline()
        ).group(0)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.outflow(base) is not None:
                return proc, base
            time.sleep(0.2)
        proc.kill()
        pytest.fail("the publisher worker process never served the plan")

    @staticmethod
    def outflow(base):
        try:
            with urllib.request.urlopen(f"{base}/status", timeout=5) as resp:
                plan = json.loads(resp.read())["plans"].get(f"-1234/{NAME}") or {}
        except (OSError, ValueError):
            return None
        return plan.get("outflow")

    def kill_publisher(self):
        self.pub.send_signal(signal.SIGKILL)
        self.pub.wait(timeout=10)

    @property
    def handle(self):
        return self.manager.plans.topologies.deployments[(-1234, NAME)].handle

    def siddhi_pid(self):
        spec = json.loads((self.handle.run_dir / "spec.json").read_text())
        cid = next(c["id"] for c in spec["components"] if c["class"].endswith(":SiddhiBolt"))
        return self.handle.metrics()["components"][cid]["instances"][0]["pid"]

    def post(self, lo, hi):
        rows = [
            {"timestamp": 1_700_000_000_000 + i, "data": ["IBM", 1.0, i]} for i in range(lo, hi)
        ]
        req = urllib.request.Request(
            f"{self.worker.http_url}/events/-1234/{NAME}/StockStream",
            json.dumps(rows).encode(),
            {"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=30) as resp:
            assert json.loads(resp.read())["accepted"] == hi - lo

    def rows(self):
        path = os.path.join(self.root, "out", "-1234", NAME, "Out.jsonl")
        try:
            with open(path, encoding="utf-8") as fh:
                lines = fh.read().split("\n")[:-1]  # a line still being written is left
        except FileNotFoundError:
            return collections.Counter()
        return collections.Counter(json.loads(line)["data"][2] for line in lines if line)

    def close(self):
        if self.pub is not None and self.pub.poll() is None:
            self.kill_publisher()
        super().close()


def _until(cond, what, detail=lambda: "", timeout=120):
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}: {detail()}"
        time.sleep(0.2)


def test_a_restarted_publisher_worker_drops_the_replay_after_a_task_restore(tmp_path):
    if shutil.which("java") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("java is required for this e2e test (CI=true)")
        pytest.skip("java is not installed: the embedded Spark cluster cannot start")
    system = MarksSystem(tmp_path)
    try:
        system.post(0, FIRST)
        _until(lambda: len(system.rows()) == FIRST, "the first results at the sink")
        system.kill_publisher()  # every result is written and acknowledged
        system.pub, system.pub_base = system.start_publisher()  # the same state dir
        restarts = system.handle.status()["restarts"]
        os.kill(system.siddhi_pid(), signal.SIGKILL)  # the stage restarts and replays
        _until(lambda: system.handle.status()["restarts"] > restarts, "the stage's restart")
        # the restarted spout asks for the whole log once it hears from the worker's log:
        # the replay of the first results, then the later ones
        system.post(FIRST, FIRST + LATER)
        _until(
            lambda: (system.outflow(system.pub_base) or {}).get("duplicates", 0) >= FIRST,
            "the replayed results at the restarted worker",
            lambda: (
                f"outflow {system.outflow(system.pub_base)}, rows {sum(system.rows().values())}, "
                f"status {system.handle.status()}"
            ),
        )
        _until(lambda: len(system.rows()) == FIRST + LATER, "the later results at the sink")
        time.sleep(1.0)  # duplicates would have arrived with them
        rows, status = system.rows(), system.outflow(system.pub_base)
        twice = {k: n for k, n in rows.items() if n > 1}
        assert not twice, f"{len(twice)} results written twice (first: {sorted(twice)[:10]})"
        assert sorted(rows) == list(range(FIRST + LATER))
        assert status["duplicates"] == FIRST  # the whole replay, recognised and dropped
        assert status["marks"]["loaded"] >= 1 and status["marks"]["durability"] == "fsync"
    finally:
        system.close()
