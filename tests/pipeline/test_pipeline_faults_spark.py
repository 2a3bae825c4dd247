"""Issue 11's fault tests 2 to 8 on one real topology, in sequence (slow).

A manager with its own embedded Spark cluster, an in-process CEP worker publishing to test
sinks, and a CEP worker *process* taking the events over HTTP (write-ahead log, durability
os); checkpoints every second in a redis-server of the module's own (the Redis store). The
plan has a filter, a `time` window aggregate and a partitioned pattern, in playback. Each
phase sends its own counted segment (sequence numbers) at a steady rate and does one fault
in the middle of it:

  8. redis-server restarted (the checkpoint store goes away and comes back);
  2. kill -9 of the receiver spout task's Python worker;
  3. kill -9 of the publisher bolt task's Python worker;
  4. kill -9 of the Spark executor JVM (every task dies; Spark starts a new executor);
  5. kill -9 of the worker process between two requests, then a restart on its data dir;
  6. the manager stopped and started again (same data dir and ports): it adopts the topology;
  7. the embedded Spark master and worker killed (executors and tasks die with them) and
     started again: the plan is submitted again (a new application) and restores the last
     checkpoint from Redis.

After each phase: every accepted event (HTTP 200) is at the filter's sink; the window and
pattern outputs hold everything `cep run` (the engine in playback over the accepted events
in order) gives, and the only extras are duplicates, which are counted and printed.
tests/manager/test_manager_faults_spark.py has more on adoption (6) and master loss (7).
"""

import collections
import json
import os
import shutil
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request

import psutil
import pytest
from tests.receiving_worker import start_receiving_worker

from benchmarks.pipeline_bench import FullSystem
from publishers.base import Sink
from tests.conftest import free_port

pytestmark = pytest.mark.slow
NAME = "Faults"
URL = f"/events/-1234/{NAME}/S"
T0 = 1_700_000_000_000
PLAN = f"""@Plan:name('{NAME}')
@Plan:playback
@Plan:dist(receiverParallelism='1', publisherParallelism='1')
@Import('S:1.0.0')
define stream S (seq long, k string, v int);
@Export('F:1.0.0')
define stream F (seq long, k string, v int);
@Export('W:1.0.0')
define stream W (seq long, k string, total long, n long);
@Export('P:1.0.0')
define stream P (k string, first long, second long);
@info(name='filter') @dist(parallel='1', execGroup='g')
from S[v >= 0] select seq, k, v insert into F;
@info(name='window') @dist(parallel='1', execGroup='g')
from S#window.time(1 sec) select seq, k, sum(v) as total, count() as n group by k
insert into W;
@dist(parallel='1')
partition with (k of S) begin
  @info(name='pattern')
  from every a=S[v > 6] -> b=S[v < 3] select a.k as k, a.seq as first, b.seq as second
  insert into P;
end;
"""


def event(seq):
    return T0 + 10 * seq, [seq, f"k{seq % 7}", (seq * 7) % 10]


class Rows(Sink):
    """Every (timestamp, row) the worker's publisher delivers for one stream."""

    type = "rows"

    def __init__(self, stream):
        super().__init__(stream, {})
        self.rows, self.lock = [], threading.Lock()

    def write_batch(self, events):
        with self.lock:
            self.rows.extend((ts, tuple(row)) for ts, row in events)

    def counter(self):
        with self.lock:
            return collections.Counter(self.rows)


def expected(accepted):
    """What `cep run` gives over the accepted events, in order: {stream: Counter}."""
    import cep

    runtime = cep.ExecutionPlanRuntime(cep.compile(PLAN), playback=True)
    out = {s: [] for s in ("F", "W", "P")}
    for stream in out:
        runtime.add_callback(
            stream, lambda evs, s=stream: out[s].extend((ts, tuple(row)) for ts, row in evs)
        )
    handler = runtime.input_handler("S")
    for i in range(0, len(accepted), 1000):
        handler.send_batch([(ts, tuple(data)) for ts, data in map(event, accepted[i : i + 1000])])
    runtime.shutdown()
    return {s: collections.Counter(rows) for s, rows in out.items()}


class RedisServer:
    """A redis-server of this module's own with an append-only file, so a restart keeps
    the checkpoints (a restart, not a wipe)."""

    def __init__(self, binary, workdir):
        self.binary, self.workdir, self.port = binary, str(workdir), free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.start()

    def start(self):
        self.proc = subprocess.Popen(
            [
                self.binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "yes",
                "--appendfsync",
                "always",
                "--dir",
                self.workdir,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        import redis

        client = redis.Redis.from_url(self.url)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                client.ping()
                return
            except redis.RedisError:
                time.sleep(0.05)
        pytest.fail(f"redis-server did not start on port {self.port}")

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=20)


def start_worker(system, state):
    return start_receiving_worker(system, state, NAME, "w-faults")


def post(base, lo, hi):
    """Post events lo..hi-1; the seqs the worker answered 200 for."""
    body = json.dumps(
        [{"timestamp": ts, "data": data} for ts, data in map(event, range(lo, hi))]
    ).encode()
    req = urllib.request.Request(base + URL, body, {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return list(range(lo, hi)) if json.loads(resp.read())["accepted"] == hi - lo else []
    except (urllib.error.URLError, OSError, ValueError):
        return []  # nothing of a request without its 200 counts as accepted


class Pipeline:
    """The system, the worker process, the sinks and the accepted sequence numbers."""

    def __init__(self, root, redis):
        self.redis = redis
        self.system = FullSystem(
            str(root),
            checkpoint_interval=1.0,
            plan=PLAN,
            spark={
                "checkpoint.redis_url": redis.url,
                "checkpoint.keep": 5,
                "topology.master_lost_s": 8.0,
                "topology.metrics_interval_s": 0.5,
            },
            manager={"topology.resubmit_interval": 1.0},
        )
        self.sinks = {s: Rows(s) for s in ("F", "W", "P")}
        service = self.system.worker.plans[(-1234, NAME)].service
        for stream, sink in self.sinks.items():
            service.sink_set.add(stream, sink)
        self.state = str(root / "w-faults")
        self.proc, self.base = start_worker(self.system, self.state)
        self.accepted, self.next = [], 0

    @property
    def handle(self):
        return self.system.manager.plans.topologies.deployments[(-1234, NAME)].handle

    def send(self, n, fault, at=1 / 3, rate=1000):
        """Send n events at `rate`/s in requests of 100; `fault()` runs after `at` of them."""
        done_fault = None
        for i in range(0, n, 100):
            if done_fault is None and i >= n * at:
                done_fault = fault() or True
            started = time.monotonic()
            self.accepted += post(self.base, self.next, self.next + 100)
            self.next += 100
            time.sleep(max(0.0, 100 / rate - (time.monotonic() - started)))

    def task_pid(self, suffix):
        spec = json.loads((self.handle.run_dir / "spec.json").read_text())
        cid = next(c["id"] for c in spec["components"] if c["class"].endswith(suffix))
        return self.handle.metrics()["components"][cid]["instances"][0]["pid"]

    def wait_checkpoint(self, timeout=60):
        """Until a checkpoint newer than the current one completed."""

        def last():
            return (self.handle.status()["checkpoints"].get("last") or {}).get("id", 0)

        first = last()
        deadline = time.monotonic() + timeout
        while last() <= first:
            assert time.monotonic() < deadline, self.handle.status()["checkpoints"]
            time.sleep(0.2)

    def check(self, phase, started, timeout=120):
        """Every accepted event's results at the sinks; returns the duplicates per stream."""
        want = expected(self.accepted)
        assert sum(want["F"].values()) == len(self.accepted)
        deadline = time.monotonic() + timeout
        while True:
            got = {s: sink.counter() for s, sink in self.sinks.items()}
            missing = {s: sum((want[s] - got[s]).values()) for s in want}
            if not any(missing.values()):
                break
            assert time.monotonic() < deadline, (
                f"{phase}: results missing at the sinks after {timeout} s: {missing}; "
                f"status {self.handle.status()['status']}"
            )
            time.sleep(0.25)
        recovered = time.monotonic() - started
        time.sleep(1.0)  # duplicates of a replay would arrive now
        got = {s: sink.counter() for s, sink in self.sinks.items()}
        extra = {s: got[s] - want[s] for s in want}
        for s in want:  # nothing invented: the extras are duplicates of wanted results
            assert set(extra[s]) <= set(want[s]), f"{phase}: {s} rows nobody asked for"
        dups = {s: sum(extra[s].values()) for s in want}
        print(
            f"\n{phase}: {len(self.accepted)} accepted, all results at the sinks "
            f"{recovered:.1f} s after the fault; duplicates so far {dups}"
        )
        return dups

    def close(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=10)
        self.system.close()


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory, redis_server_binary):
    if shutil.which("java") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("java is required for this e2e test (CI=true)")
        pytest.skip("java is not installed: the embedded Spark cluster cannot start")
    root = tmp_path_factory.mktemp("faults")
    redis = RedisServer(redis_server_binary, root)
    p = Pipeline(root, redis)
    try:
        p.send(1000, lambda: None)
        p.check("warm-up", time.monotonic())
        yield p
    finally:
        p.close()
        redis.stop()


def kill_task(pipeline, suffix):
    def fault():
        pipeline.wait_checkpoint()
        pipeline.killed = time.monotonic()
        os.kill(pipeline.task_pid(suffix), signal.SIGKILL)

    return fault


def test_8_redis_server_restart(pipeline):
    def fault():
        pipeline.wait_checkpoint()
        pipeline.killed = time.monotonic()
        pipeline.redis.stop()
        time.sleep(2.0)  # checkpoints fail meanwhile; the data path goes on
        pipeline.redis.start()

    pipeline.send(3000, fault)
    pipeline.check("8 redis-server restart", pipeline.killed)
    pipeline.wait_checkpoint(90)  # checkpoints complete again in the restarted store
    assert pipeline.handle.status()["status"] == "ACTIVE"


def test_2_spout_task_killed(pipeline):
    restarts = pipeline.handle.status()["restarts"]
    pipeline.send(3000, kill_task(pipeline, ":ReceiverSpout"))
    pipeline.check("2 spout task kill -9", pipeline.killed)
    status = pipeline.handle.status()
    assert status["restarts"] > restarts and status["checkpoints"]["restored_from"]


def test_3_publisher_bolt_task_killed(pipeline):
    restarts = pipeline.handle.status()["restarts"]
    pipeline.send(3000, kill_task(pipeline, ":PublisherBolt"))
    pipeline.check("3 publisher bolt task kill -9", pipeline.killed)
    assert pipeline.handle.status()["restarts"] > restarts


def executor_pid(app_id):
    for proc in psutil.process_iter(["cmdline"]):
        cmd = proc.info["cmdline"] or []
        if "org.apache.spark.executor.CoarseGrainedExecutorBackend" in cmd and app_id in cmd:
            return proc.pid
    pytest.fail(f"no executor JVM of {app_id}")


def test_4_executor_jvm_killed(pipeline):
    def fault():
        pipeline.wait_checkpoint()
        pid = executor_pid(pipeline.handle.status()["app_id"])
        pipeline.killed = time.monotonic()
        os.kill(pid, signal.SIGKILL)

    pipeline.send(3000, fault)
    pipeline.check("4 executor JVM kill -9", pipeline.killed, timeout=180)


def test_5_worker_process_killed_and_restarted(pipeline):
    def fault():
        pipeline.killed = time.monotonic()
        pipeline.proc.send_signal(signal.SIGKILL)  # between two requests: all were answered
        pipeline.proc.wait(timeout=10)
        pipeline.proc, pipeline.base = start_worker(pipeline.system, pipeline.state)

    before, first = len(pipeline.accepted), pipeline.next
    pipeline.send(3000, fault, at=0.5)
    assert len(pipeline.accepted) - before == pipeline.next - first  # every request: 200
    pipeline.check("5 worker process kill -9 and restart", pipeline.killed)


def test_6_manager_restarted(pipeline):
    """The same outputs across a manager restart (tests/manager/test_manager_faults_spark.py
    has the adoption details): the restarted manager adopts the running application."""
    app = pipeline.handle.status()["app_id"]

    def fault():
        pipeline.killed = time.monotonic()
        pipeline.system.restart_manager()

    pipeline.send(3000, fault)
    pipeline.check("6 manager restart", pipeline.killed)
    status = pipeline.handle.status()
    assert status["app_id"] == app and status["status"] == "ACTIVE"


def test_7_embedded_master_and_worker_killed(pipeline):
    from topology.cluster import stop_cluster

    system = pipeline.system
    app = pipeline.handle.status()["app_id"]

    def fault():
        pipeline.wait_checkpoint()
        pipeline.killed = time.monotonic()
        stop_cluster(system.launcher.settings)  # master and worker; executors die with them
        # the drivers see the pids end, the manager resubmits at once and that submit starts
        # the embedded cluster again: nobody else restarts it
        deadline = time.monotonic() + 90
        while system.manager.topologies.recovery.recovered < 1:
            assert time.monotonic() < deadline, system.manager.plans.status(-1234, NAME)
            time.sleep(0.25)

    pipeline.send(3000, fault)
    pipeline.check("7 embedded master+worker killed", pipeline.killed, timeout=240)
    status = pipeline.handle.status()
    assert status["app_id"] != app and status["checkpoints"]["restored_from"]
