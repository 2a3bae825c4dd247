"""Pipeline benchmark: throughput and latency of the worker's parts of the event path.

Stages (each run `--runs` times after a warm-up; medians reported):
  ingest     client PUSH -> worker ZeroMQ receiver -> validation -> spout connection -> a PULL
             socket standing in for the receiver spout (registered with a real registry)
  publish    a DEALER socket standing in for a publisher bolt -> worker publisher service ->
             file sink (JSON lines), until the last frame is acknowledged; with --identity
             version 5 frames (publisher id, lanes: duplicate marks kept), with --marks
             memory,os,fsync each way of keeping the marks in the same run (delivery.marks)
  link       one PUSH -> PULL link on loopback carrying 1,000-event frames, plain and with
             CURVE (alternating runs): the cost of encryption per link
  latency    ZeroMQ receiver -> sink through a standalone worker running a filter plan on the
             engine, at a fixed rate (default 20K events/s): p50/p99 in ms
  full       worker -> spout -> Siddhi bolt -> publisher bolt -> worker publisher -> sink, the
             filter plan on a manager with its own embedded Spark cluster (stopped at the end);
             throughput, then latency (p50/p99) at --rate events/s; with --curve, ZeroMQ CURVE
             on every link and the registry's cluster secret (security.auth); with --compare,
             the full stage without both and then with both, in the same run;
             --checkpoint-interval S sets checkpoint.interval (0: off); with
             --checkpoint-compare, three systems in the same run: at most once (no
             write-ahead log, no checkpoints), checkpoints every S s with durability os, and
             with fsync: throughput (target os >= 80% of at most once), then p50/p99 latency
             at --rate (target p99 <= 50 ms at 20K events/s). Recovery after a kill -9:
             benchmarks/recovery_bench.py

    .venv/bin/python benchmarks/pipeline_bench.py --stage ingest --events 500000 --runs 5
    .venv/bin/python benchmarks/pipeline_bench.py --stage publish --marks memory,os,fsync --runs 3
    .venv/bin/python benchmarks/pipeline_bench.py --stage full --compare --runs 3
    .venv/bin/python benchmarks/pipeline_bench.py --stage full --checkpoint-compare --runs 3
"""

import argparse
import json
import os
import platform
import re
import statistics
import sys
import tempfile
import time

import zmq

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from cep.protocol.registry_client import RegistryClient  # noqa: E402
from manager.registry.service import RegistryService  # noqa: E402
from cep.protocol.frames import decode_batch, encode_batch  # noqa: E402

TENANT, PLAN, STREAM = -1234, "Bench", "StockStream"
ATTRS = [["symbol", "string"], ["price", "double"], ["volume", "long"]]


def entry():
    return {
        "tenant": TENANT,
        "name": PLAN,
        "version": 1,
        "imported": [{"stream": STREAM, "attributes": ATTRS, "sources": []}],
        "exported": [{"stream": "Out", "attributes": ATTRS, "sinks": []}],
    }


def batches(n, size=1000, t0=1_700_000_000_000):
    syms = ["IBM", "WSO2", "ORCL", "MSFT"]
    out = []
    for b in range(0, n, size):
        out.append(
            [[t0 + i, [syms[i % 4], float(i % 1000), i]] for i in range(b, min(n, b + size))]
        )
    return out


def run_ingest(n):
    """Events/s from a PUSH client through the worker into a stand-in spout."""
    from cep.worker.inflow import SpoutConnection
    from cep.worker.plans import spec_from_deployment
    from receivers.router import IngestRouter
    from receivers.zmq_receiver import ZmqEventClient, ZmqReceiver

    reg = RegistryService(port=0, bind_host="127.0.0.1")
    reg.start()
    client = RegistryClient(f"tcp://127.0.0.1:{reg.port}")
    spout = zmq.Context.instance().socket(zmq.PULL)
    port = spout.bind_to_random_port("tcp://127.0.0.1")
    client.register("receiver", TENANT, PLAN, "127.0.0.1", port, streams=[STREAM])
    spec = spec_from_deployment(entry())
    conn = SpoutConnection(client, TENANT, PLAN, STREAM, "bench").start()
    router = IngestRouter()
    router.register((str(TENANT), PLAN, STREAM), spec.imported[0].definition, conn.offer)
    recv = ZmqReceiver(router, "tcp://127.0.0.1:0").start()
    sender = ZmqEventClient(recv.url)
    data = batches(n)
    got, t0 = 0, time.perf_counter()
    for b in data:
        sender.send((str(TENANT), PLAN, STREAM), b)
        while spout.poll(0):
            got += len(decode_batch(spout.recv())[1])
    while got < n:
        if not spout.poll(10000):
            raise RuntimeError(f"ingest: only {got} of {n} events arrived")
        got += len(decode_batch(spout.recv())[1])
    elapsed = time.perf_counter() - t0
    for part in (sender,):
        part.close()
    recv.stop()
    conn.stop()
    spout.close(0)
    client.close()
    reg.stop()
    return n / elapsed


def run_link(n, keys=None):
    """Events/s over one PUSH -> PULL link in 1,000-event frames (CURVE when keys are given)."""
    from cep.security import curve

    ctx = zmq.Context()
    curve.start_authenticator(ctx, keys)
    pull, push = ctx.socket(zmq.PULL), ctx.socket(zmq.PUSH)
    curve.server(pull, keys)
    port = pull.bind_to_random_port("tcp://127.0.0.1")
    curve.client(push, keys)
    push.connect(f"tcp://127.0.0.1:{port}")
    frames = [encode_batch(STREAM, b) for b in batches(n)]
    push.send(frames[0])
    pull.recv()  # connected (and, with CURVE, the handshake done)
    left, t0 = len(frames), time.perf_counter()
    for f in frames:
        push.send(f)
        while pull.poll(0):
            pull.recv()
            left -= 1
    while left > 0:
        pull.recv()
        left -= 1
    elapsed = time.perf_counter() - t0
    curve.stop_authenticator(ctx)
    ctx.destroy(linger=0)
    return n / elapsed


def link_compare(args):
    """run_link plain and with CURVE, alternating, medians and their ratio."""
    from cep.security import curve

    with tempfile.TemporaryDirectory() as tmp:
        keys = curve.create_or_load(os.path.join(tmp, "curve"))
    rates = {"plain": [], "curve": []}
    for i in range(args.runs):
        for name in ("plain", "curve") if i % 2 == 0 else ("curve", "plain"):
            rates[name].append(run_link(args.events, keys if name == "curve" else None))
    plain, secure = (statistics.median(rates[n]) for n in ("plain", "curve"))
    print(
        json.dumps(
            {
                "stage": "link",
                "events": args.events,
                "plain_events_per_s": int(plain),
                "curve_events_per_s": int(secure),
                "curve_vs_plain": round(secure / plain, 3),
                "load": [round(x, 2) for x in os.getloadavg()],
            }
        ),
        flush=True,
    )


def run_publish(n, identity=False, frame=1000, marks=None):
    """Events/s from a stand-in publisher bolt through the publisher service to a file sink,
    until the service acknowledged the last frame. `identity`: version 5 frames (a publisher
    id and one lane per frame, numbered as a real publisher bolt numbers them), so the
    service keeps duplicate marks; `marks` (fsync or os): the marks are kept on disk too."""
    from cep.protocol.frames import encode_output
    from publishers.service import PublisherService, numbered
    from publishers.sink_set import SinkSet

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "out.jsonl")
        sset = SinkSet.from_specs({"Out": [{"type": "file", "options": {"path": path}}]}, "b")
        store = None
        if marks:
            from publishers.marks_log import MarksLog

            store = MarksLog(os.path.join(tmp, "out.marks"), marks, "b").open(sset.dedup)
        svc = PublisherService(sset, "127.0.0.1").start()
        push = zmq.Context.instance().socket(zmq.DEALER)  # as a publisher bolt
        push.connect(f"tcp://127.0.0.1:{svc.port}")
        frames = []
        for i, b in enumerate(batches(n, frame)):
            if identity:
                lane = (("w1/-1234/Bench/StockStream#0a1b2c3d|f:0", i * frame, len(b)),)
                body = encode_output("Out", b, "Bench[-1234]:pub:0", 0, i * frame, lane)
            else:
                body = encode_batch("Out", b)
            frames.append(numbered(i + 1, body))
        last = len(frames).to_bytes(8, "little")
        t0, c0 = time.perf_counter(), time.process_time()
        for f in frames:
            push.send_multipart(f)
        while push.recv() != last:  # acknowledgements are cumulative: wait for the last
            pass
        elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
        push.close(0)
        svc.stop()
        if store is not None:
            store.close()
    _PUBLISH_CPU.append(cpu / n * 1e6)
    return n / elapsed


_PUBLISH_CPU: list = []  # CPU seconds (this process, every thread) per million events


LATENCY_PLAN = """@Plan:name('Bench')
define stream StockStream (symbol string, price double, volume long);
@sink(type='log')
define stream Out (symbol string, price double, volume long);
from StockStream[price >= 0.0] select symbol, price, volume insert into Out;
"""


def run_latency(n, rate):
    """p50/p99 ms from the worker's ZeroMQ receiver to the sink, standalone worker."""
    from cep.worker.config import load_config
    from cep.worker.node import Worker
    from publishers.base import Sink
    from receivers.zmq_receiver import ZmqEventClient

    with tempfile.TemporaryDirectory() as tmp:
        plan = os.path.join(tmp, "bench.siddhiql")
        with open(plan, "w") as fh:
            fh.write(LATENCY_PLAN)
        cfg = load_config(
            path=os.path.join(tmp, "none.yaml"),
            env={},
            overrides={
                "worker.mode": "standalone",
                "standalone.plans": [plan],
                "receivers.http_port": 0,
                "receivers.http_host": "127.0.0.1",
                "receivers.zmq_port": 0,
                "receivers.zmq_host": "127.0.0.1",
            },
        )
        w = Worker(cfg).start()
        while not w.plans:
            time.sleep(0.01)
        handle = next(iter(w.plans.values()))
        lat = []

        class Clock(Sink):
            type = "clock"

            def write_batch(self, events):
                now = time.time() * 1000
                lat.extend(now - ts for ts, _ in events)

        handle.sinks.add("Out", Clock("Out", {}))
        client = ZmqEventClient(w.zmq_url)
        per_ms = rate / 1000.0
        sent, t0 = 0, time.perf_counter()
        while sent < n:  # send what is due every millisecond, stamped with the send time
            due = min(n, int((time.perf_counter() - t0) * 1000 * per_ms) + 1)
            if due > sent:
                now = int(time.time() * 1000)
                client.send(
                    ("-1234", "Bench", STREAM), [[now, ["IBM", 1.0, i]] for i in range(sent, due)]
                )
                sent = due
            time.sleep(0.0005)
        deadline = time.time() + 10
        while len(lat) < n and time.time() < deadline:
            time.sleep(0.01)
        client.close()
        w.stop()
    lat.sort()
    return {"p50_ms": lat[len(lat) // 2], "p99_ms": lat[int(len(lat) * 0.99)], "received": len(lat)}


FULL_PLAN = """@Plan:name('BenchFilter')
@Plan:dist(receiverParallelism='1', publisherParallelism='1')
@Import('StockStream:1.0.0')
define stream StockStream (symbol string, price double, volume long);
@Export('Out:1.0.0')
define stream Out (symbol string, price double, volume long);
@info(name='filter') @dist(parallel='1')
from StockStream[price >= 0.0] select symbol, price, volume insert into Out;
"""


class FullSystem:
    """A manager on its own embedded Spark cluster, one worker, the filter plan deployed.
    `secure`: ZeroMQ CURVE on every link and authentication on (the worker presents the
    manager's cluster secret); otherwise both off (loopback only)."""

    def __init__(
        self,
        root,
        batch_size=1000,
        secure=False,
        checkpoint_interval=5.0,
        plan=None,
        spark=None,
        durability="os",
        wal=True,
        manager=None,
        worker=None,
    ):
        """`plan` (text; default the filter plan, named BenchFilter) is deployed; `spark`
        adds launcher settings (e.g. checkpoint.redis_url); `durability` is the worker's
        wal.durability; `wal=False` turns the worker's write-ahead log off (at-most-once);
        `manager` adds manager settings, `worker` worker settings."""
        import threading
        from werkzeug.serving import make_server
        from cep.worker.config import load_config
        from cep.worker.node import Worker
        from manager.launcher import SparkLauncher
        from manager.server import Manager
        from manager.settings import load_manager_settings
        from manager.web import create_app

        self.launcher = SparkLauncher(
            {
                "spark.state_dir": os.path.join(root, "spark"),
                "spark.slots": 8,
                "spark.host": "127.0.0.1",
                "checkpoint.interval": checkpoint_interval,
                **(spark or {}),
            }
        )
        self.manager_overrides = {
            "manager.data_dir": os.path.join(root, "manager"),
            "registry.port": 0,
            "registry.bind_host": "127.0.0.1",
            "manager.advertised_host": "127.0.0.1",
            "security.curve": secure,
            "security.auth": secure,
            **(manager or {}),
        }
        self.manager = Manager(
            load_manager_settings(overrides=self.manager_overrides, env={}), launcher=self.launcher
        ).start()
        self.keys = self.manager.links.curve  # clients of the worker's ZeroMQ receiver use them
        secret_file = os.path.join(root, "cluster-secret")
        fd = os.open(secret_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(self.manager.auth.cluster_secret)
        self.server = make_server(
            "127.0.0.1", 0, create_app({"MANAGER": self.manager}), threaded=True
        )
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.plan_name = re.search(r"@Plan:name\('([^']+)'\)", plan or FULL_PLAN).group(1)
        self.manager.plans.add(-1234, plan or FULL_PLAN)
        self.worker = Worker(
            load_config(
                path=os.path.join(root, "none.yaml"),
                env={},
                overrides={
                    "worker.id": "bench",
                    "managers.urls": [f"http://127.0.0.1:{self.server.server_port}"],
                    "managers.registries": [self.manager.registry_url],
                    "worker.advertised_host": "127.0.0.1",
                    "receivers.http_host": "127.0.0.1",
                    "receivers.http_port": 0,
                    "receivers.zmq_host": "127.0.0.1",
                    "receivers.zmq_port": 0,
                    "managers.poll_interval": 0.5,
                    "worker.state_dir": os.path.join(root, "state"),
                    "transport.batch_size": batch_size,
                    # auth off: the manager gives tasks no secret, so the worker must not ask for one
                    "managers.cluster_secret_file": secret_file if secure else "",
                    "wal.durability": durability,
                    "wal.enabled": wal,
                    "security.curve": secure,
                    "security.curve_dir": os.path.join(root, "manager", "security", "curve")
                    if secure
                    else "",
                    **(worker or {}),
                },
            )
        ).start()
        self.lat, self.count = [], 0
        self._wait_active()

    def _wait_active(self, timeout=600):
        from publishers.base import Sink

        deadline = time.time() + timeout
        while time.time() < deadline:
            st = self.manager.plans.status(-1234, self.plan_name)
            inflow = (st.get("inflow") or {}).get("bench", {})
            if self.manager.plans.transport.get("transport") == "nats":
                plan = self.worker.status()["plans"].get(f"-1234/{self.plan_name}") or {}
                inflow = plan.get("inflow") or {"required": 0, "connected": 0}
                if (
                    st["state"] == "ACTIVE"
                    and inflow["required"] >= 1
                    and inflow["connected"] == inflow["required"]
                ):
                    break  # JetStream: no registered connections; the worker's own view
            elif (
                st["state"] == "ACTIVE"
                and st["outflow"]["connected"] == 1
                and inflow.get("connected", 0) >= 1
                and inflow.get("connected") == inflow.get("required", 1)
            ):
                break
            time.sleep(0.5)
        else:
            raise RuntimeError(f"{self.plan_name} not ACTIVE with all connections: {st}")
        if self.plan_name != "BenchFilter":
            return
        system = self

        class Probe(Sink):
            type = "probe"

            def write_batch(self, events):
                now = time.time() * 1000
                system.count += len(events)
                if system.lat is not None:
                    system.lat.extend(now - ts for ts, _ in events)

        self.worker.plans[(-1234, "BenchFilter")].service.sink_set.add("Out", Probe("Out", {}))

    def throughput(self, n):
        from receivers.zmq_receiver import ZmqEventClient

        client = ZmqEventClient(self.worker.zmq_url, keys=self.keys)
        data, self.lat = batches(n), None
        start, t0 = self.count, time.perf_counter()
        for b in data:
            client.send(("-1234", "BenchFilter", STREAM), b)
        while self.count - start < n:
            if time.perf_counter() - t0 > 120:
                plan = self.worker.status()["plans"]["-1234/BenchFilter"]
                raise RuntimeError(
                    f"only {self.count - start} of {n} events reached the sink; "
                    f"worker inflow: {plan['inflow']['streams']}"
                )
            time.sleep(0.002)
        elapsed = time.perf_counter() - t0
        client.close()
        return n / elapsed

    def latency(self, n, rate):
        from receivers.zmq_receiver import ZmqEventClient

        client = ZmqEventClient(self.worker.zmq_url, keys=self.keys)
        self.lat, start = [], self.count
        per_ms, sent, t0 = rate / 1000.0, 0, time.perf_counter()
        while sent < n:
            due = min(n, int((time.perf_counter() - t0) * 1000 * per_ms) + 1)
            if due > sent:
                now = int(time.time() * 1000)
                client.send(
                    ("-1234", "BenchFilter", STREAM),
                    [[now, ["IBM", 1.0, i]] for i in range(sent, due)],
                )
                sent = due
            time.sleep(0.0005)
        deadline = time.time() + 30
        while self.count - start < n and time.time() < deadline:
            time.sleep(0.01)
        client.close()
        lat = sorted(self.lat)
        return {
            "p50_ms": lat[len(lat) // 2],
            "p99_ms": lat[int(len(lat) * 0.99)],
            "received": len(lat),
        }

    def restart_manager(self):
        """Stop the manager (registry and REST; the topology keeps running) and start a new
        one on the same data dir, registry port and HTTP port: it adopts the topology."""
        import threading
        from werkzeug.serving import make_server
        from manager.server import Manager
        from manager.settings import load_manager_settings
        from manager.web import create_app

        http_port = self.server.server_port
        self.manager_overrides["registry.port"] = self.manager.registry.port
        self.server.shutdown()
        self.server.server_close()
        self.manager.stop()
        self.manager = Manager(
            load_manager_settings(overrides=self.manager_overrides, env={}), launcher=self.launcher
        ).start()
        self.server = make_server(
            "127.0.0.1", http_port, create_app({"MANAGER": self.manager}), threaded=True
        )
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        from topology.cluster import stop_cluster

        self.worker.stop()
        self.server.shutdown()
        self.manager.stop(kill_topologies=True)
        stop_cluster(self.launcher.settings)


def run_full(args, secure=False):
    """Throughput and latency through worker -> spout -> Siddhi bolt -> publisher bolt ->
    worker publisher -> sink, on an embedded Spark cluster; returns the median events/s."""
    label = "full+curve+auth" if secure else "full"
    with tempfile.TemporaryDirectory() as root:
        system = FullSystem(
            root, args.batch_size, secure=secure, checkpoint_interval=args.checkpoint_interval
        )
        try:
            import psutil

            system.throughput(min(args.events, 50000))  # warm-up
            me, rates, cpu = psutil.Process(), [], []
            for _ in range(args.runs):
                c0, t0 = sum(me.cpu_times()[:2]), time.perf_counter()
                rates.append(system.throughput(args.events))
                cpu.append((sum(me.cpu_times()[:2]) - c0) / (time.perf_counter() - t0))
            print(
                json.dumps(
                    {
                        "stage": label,
                        "events": args.events,
                        "median_events_per_s": int(statistics.median(rates)),
                        "runs": [int(r) for r in rates],
                        "worker_process_cores": round(statistics.median(cpu), 2),
                        "load": [round(x, 2) for x in os.getloadavg()],
                    }
                ),
                flush=True,
            )
            if args.no_latency:
                return statistics.median(rates)
            runs = [system.latency(args.rate * 3, args.rate) for _ in range(args.runs)]
            print(
                json.dumps(
                    {
                        "stage": f"{label}-latency",
                        "rate": args.rate,
                        "median_p50_ms": round(statistics.median(r["p50_ms"] for r in runs), 2),
                        "median_p99_ms": round(statistics.median(r["p99_ms"] for r in runs), 2),
                        "runs": [round(r["p99_ms"], 2) for r in runs],
                    }
                ),
                flush=True,
            )
            return statistics.median(rates)
        finally:
            system.close()


MODES = {  # name: (checkpoint interval or None for --checkpoint-interval, wal, durability)
    "at-most-once": (0.0, False, "os"),
    "os": (None, True, "os"),
    "fsync": (None, True, "fsync"),
}


def run_checkpoint_compare(args):
    """The full stage at most once (no write-ahead log, no checkpoints), with checkpoints
    every --checkpoint-interval s and durability os, and the same with fsync: all three up at
    once, throughput runs alternating (the order rotates), then latency at --rate."""
    interval = args.checkpoint_interval or 5.0
    names = list(MODES)
    with tempfile.TemporaryDirectory() as root:
        systems, rates, lat = {}, {n: [] for n in names}, {n: [] for n in names}
        try:
            for name, (every, wal, durability) in MODES.items():
                systems[name] = FullSystem(
                    os.path.join(root, name),
                    args.batch_size,
                    checkpoint_interval=interval if every is None else every,
                    wal=wal,
                    durability=durability,
                )
                systems[name].throughput(min(args.events, 50000))  # warm-up
            for i in range(args.runs):
                for name in names[i % 3 :] + names[: i % 3]:
                    rates[name].append(systems[name].throughput(args.events))
            if not args.no_latency:
                for i in range(args.runs):
                    for name in names[i % 3 :] + names[: i % 3]:
                        # 12 s per run: at least two checkpoints fall inside each
                        lat[name].append(systems[name].latency(args.rate * 12, args.rate))
        finally:
            for system in systems.values():
                system.close()
    med = {n: statistics.median(rates[n]) for n in names}
    out = {
        "stage": "full-checkpoints",
        "events": args.events,
        "checkpoint_interval_s": interval,
        "events_per_s": {n: int(v) for n, v in med.items()},
        "runs": {n: [int(r) for r in rates[n]] for n in names},
        "os_vs_at_most_once": round(med["os"] / med["at-most-once"], 3),
        "fsync_vs_at_most_once": round(med["fsync"] / med["at-most-once"], 3),
        "at_least_80_percent": med["os"] >= 0.8 * med["at-most-once"],
        "load": [round(x, 2) for x in os.getloadavg()],
    }
    if not args.no_latency:
        out["latency_rate"] = args.rate
        out["p99_ms"] = {n: round(statistics.median(r["p99_ms"] for r in lat[n]), 2) for n in names}
        out["p50_ms"] = {n: round(statistics.median(r["p50_ms"] for r in lat[n]), 2) for n in names}
    print(json.dumps(out), flush=True)


def run_compare(args):
    """The full stage without CURVE and auth and with both, in the same run: both systems up
    at once (each on its own embedded Spark cluster), their throughput runs alternating
    (plain, secure, then secure, plain, ...) so a change of machine load hits both alike."""
    with tempfile.TemporaryDirectory() as root:
        systems = {}
        try:
            for name, secure in (("plain", False), ("secure", True)):
                systems[name] = FullSystem(os.path.join(root, name), args.batch_size, secure)
                systems[name].throughput(min(args.events, 50000))  # warm-up
            rates = {"plain": [], "secure": []}
            for i in range(args.runs):
                for name in ("plain", "secure") if i % 2 == 0 else ("secure", "plain"):
                    rates[name].append(systems[name].throughput(args.events))
        finally:
            for system in systems.values():
                system.close()
    plain, secure = (statistics.median(rates[n]) for n in ("plain", "secure"))
    print(
        json.dumps(
            {
                "stage": "full-compare",
                "events": args.events,
                "plain_events_per_s": int(plain),
                "secure_events_per_s": int(secure),
                "plain_runs": [int(r) for r in rates["plain"]],
                "secure_runs": [int(r) for r in rates["secure"]],
                "secure_vs_plain": round(secure / plain, 3),
                "within_15_percent": secure >= 0.85 * plain,
                "load": [round(x, 2) for x in os.getloadavg()],
            }
        ),
        flush=True,
    )


def publish_compare(args):
    """The publish stage once per way of keeping marks (`--marks`), alternating in each
    round; medians of --runs."""
    modes = [m.strip() for m in args.marks.split(",") if m.strip()] or [""]
    identity = args.identity or args.marks != ""
    rates = {m: [] for m in modes}
    cpu = {m: [] for m in modes}
    for m in modes:  # warm-up
        run_publish(min(args.events, 50000), identity, args.frame_size, _store_mode(m))
    for _ in range(args.runs):
        for m in modes:
            rates[m].append(run_publish(args.events, identity, args.frame_size, _store_mode(m)))
            cpu[m].append(_PUBLISH_CPU[-1])
    for m in modes:
        print(
            json.dumps(
                {
                    "stage": "publish",
                    "frames": "v5" if identity else "v1",
                    "marks": m or ("memory" if identity else None),
                    "frame_size": args.frame_size,
                    "events": args.events,
                    "median_events_per_s": int(statistics.median(rates[m])),
                    "runs": [int(r) for r in rates[m]],
                    # CPU time is what the marks cost; wall-clock rates swing with the load
                    "median_cpu_s_per_M_events": round(statistics.median(cpu[m]), 2),
                    "load": round(os.getloadavg()[0], 1),
                }
            ),
            flush=True,
        )


def _store_mode(mode):
    return None if mode in ("", "memory") else mode


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--stage", choices=["ingest", "publish", "link", "latency", "full", "all"], default="all"
    )
    ap.add_argument("--events", type=int, default=300000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--rate", type=int, default=20000, help="latency stage: events/s")
    ap.add_argument(
        "--batch-size",
        type=int,
        default=1000,
        help="full stage: the worker's transport.batch_size (events per frame)",
    )
    ap.add_argument(
        "--curve",
        action="store_true",
        help="full stage: ZeroMQ CURVE on every "
        "link and the registry's cluster secret (security.curve, security.auth)",
    )
    ap.add_argument(
        "--compare",
        action="store_true",
        help="full stage: without and then with CURVE and auth in the same run, and their ratio",
    )
    ap.add_argument("--no-latency", action="store_true", help="full stage: throughput only")
    ap.add_argument(
        "--checkpoint-interval",
        type=float,
        default=5.0,
        help="full stage: checkpoint.interval in seconds (0: no checkpoints)",
    )
    ap.add_argument(
        "--checkpoint-compare",
        action="store_true",
        help="full stage: without "
        "checkpoints (at most once), with them (os) and with fsync in the same run",
    )
    ap.add_argument(
        "--identity",
        action="store_true",
        help="publish stage: version 5 frames with a publisher id and lanes, as publisher "
        "bolts send them (the service keeps duplicate marks)",
    )
    ap.add_argument("--frame-size", type=int, default=1000, help="publish stage: events per frame")
    ap.add_argument(
        "--marks",
        default="",
        help="publish stage: comma-separated ways to keep the duplicate marks, alternating in "
        "every round: memory (in memory only), os, fsync (on disk: delivery.marks); implies "
        "--identity",
    )
    args = ap.parse_args(argv)
    print(
        f"# {platform.node()} {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} cores, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
    )
    stages = ["ingest", "publish", "latency", "full"] if args.stage == "all" else [args.stage]
    for stage in stages:
        if stage == "full":
            if args.checkpoint_compare:
                run_checkpoint_compare(args)
            else:
                run_compare(args) if args.compare else run_full(args, secure=args.curve)
            continue
        if stage == "link":
            link_compare(args)
            continue
        if stage == "latency":
            runs = [run_latency(args.rate * 3, args.rate) for _ in range(args.runs)]
            p99 = statistics.median(r["p99_ms"] for r in runs)
            p50 = statistics.median(r["p50_ms"] for r in runs)
            print(
                json.dumps(
                    {
                        "stage": "latency",
                        "rate": args.rate,
                        "median_p50_ms": round(p50, 2),
                        "median_p99_ms": round(p99, 2),
                        "runs": len(runs),
                    }
                )
            )
            continue
        if stage == "publish":
            publish_compare(args)
            continue
        fn = run_ingest
        fn(min(args.events, 50000))  # warm-up
        rates = [fn(args.events) for _ in range(args.runs)]
        print(
            json.dumps(
                {
                    "stage": stage,
                    "events": args.events,
                    "median_events_per_s": int(statistics.median(rates)),
                    "runs": [int(r) for r in rates],
                }
            )
        )


if __name__ == "__main__":
    main()
