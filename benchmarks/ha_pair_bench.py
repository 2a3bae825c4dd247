"""Standalone HA pair benchmark: fail-over time and the throughput of a pair.

failover    two `cep worker --mode standalone --ha-peer` processes with the default intervals
            (ha.sync_interval 1 s, ha.failover_s 5 s), dual-send, a steady stream to both;
            kill -9 of the active; the time until the new active writes to the shared file
            sink (the dead one writes nothing more). The killed node is started again, syncs
            and becomes the passive; the next run kills the other one. Goal: <= 6 s.
throughput  one standalone worker, then a pair in forward mode (the client sends to the
            active, which forwards before it answers) and a pair in dual-send mode (the client
            sends every batch to both), alternating within one run: events/s from the first
            request until the active wrote every output (2 client threads per node; their
            order does not matter here: no fail-over in this stage), and the events per
            CPU-second of each worker process. Goal: a pair >= 70% of one worker.

  .venv/bin/python benchmarks/ha_pair_bench.py --stage failover --runs 10
  .venv/bin/python benchmarks/ha_pair_bench.py --stage throughput --runs 3 --events 200000
"""

import argparse
import http.client
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CEP = os.path.join(os.path.dirname(sys.executable), "cep")
PLAN = """@Plan:name('HaBench')
define stream S (k string, v long);
@info(name='sums')
from S#window.length(5) select k, sum(v) as total group by k insert into Out;
"""
PATH = "/events/-1234/HaBench/S"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Node:
    """One `cep worker` process."""

    def __init__(self, tmp, name, port, peer_port=None, forward=False, sync="1.0", failover="5.0"):
        self.name, self.port, self.url = name, port, f"http://127.0.0.1:{port}"
        self.cmd = [
            CEP,
            "worker",
            "--mode",
            "standalone",
            "--plan",
            os.path.join(tmp, "p.siddhiql"),
            "--id",
            name,
            "--http-port",
            str(port),
            "--zmq-port",
            "-1",
        ]
        if peer_port:
            self.cmd += ["--ha-peer", f"http://127.0.0.1:{peer_port}"]
        if forward:
            self.cmd.append("--ha-forward")
        self.env = {
            **os.environ,
            "CEP_SINKS_DEFAULT": "file",
            "CEP_SINKS_DIR": os.path.join(tmp, "sinks"),
            "CEP_WORKER_STATE_DIR": os.path.join(tmp, f"state-{name}"),
            "CEP_HA_SYNC_INTERVAL": sync,
            "CEP_HA_FAILOVER_S": failover,
            "CEP_MANAGERS_POLL_INTERVAL": "0.2",
            "CEP_CLUSTER_SECRET": os.environ.get("CEP_CLUSTER_SECRET") or "ha-bench",
        }
        self.log = open(os.path.join(tmp, f"{name}.log"), "ab")
        self.proc = None

    def start(self):
        self.proc = subprocess.Popen(
            self.cmd, env=self.env, stdout=self.log, stderr=subprocess.STDOUT, cwd=ROOT
        )
        return self

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def status(self):
        try:
            with urllib.request.urlopen(self.url + "/status", timeout=2) as resp:
                return json.loads(resp.read())
        except OSError:
            return None

    def ha(self):
        s = self.status()
        return s and s.get("ha")


def wait(cond, timeout, step=0.02):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = cond()
        if v:
            return v
        time.sleep(step)
    raise TimeoutError("condition not met in time")


def body(start, n):
    return json.dumps(
        [
            {"timestamp": 1000 + i, "data": [f"k{i % 100}", i % 1000]}
            for i in range(start, start + n)
        ]
    ).encode()


def post(conn_cache, url, data):
    """POST with a kept-alive connection per URL; the status (0: no answer)."""
    host, port = url.rsplit(":", 1)
    conn = conn_cache.get(url) or http.client.HTTPConnection(host[7:], int(port), timeout=5)
    conn_cache[url] = conn
    try:
        conn.request("POST", PATH, body=data, headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        resp.read()
        return resp.status
    except (OSError, http.client.HTTPException):
        conn.close()
        conn_cache.pop(url, None)
        return 0


def sink_size(tmp):
    try:
        return os.path.getsize(os.path.join(tmp, "sinks", "-1234", "HaBench", "Out.jsonl"))
    except OSError:
        return 0


# -- fail-over --
def stream_to(nodes, stop, counter):
    conns, i = {}, counter[0]
    while not stop.is_set():
        data = body(i, 100)
        for n in list(nodes):
            if n.proc.poll() is None:
                post(conns, n.url, data)
        i += 100
        counter[0] = i
        time.sleep(0.02)


def failover_runs(runs):
    tmp = tempfile.mkdtemp(prefix="habench-")
    open(os.path.join(tmp, "p.siddhiql"), "w").write(PLAN)
    pa, pb = free_port(), free_port()
    a, b = Node(tmp, "a", pa, pb).start(), Node(tmp, "b", pb, pa).start()
    nodes, times = [a, b], []
    stop, counter = threading.Event(), [0]
    feeder = threading.Thread(target=stream_to, args=(nodes, stop, counter), daemon=True)
    try:
        wait(
            lambda: (
                (a.ha() or {}).get("role") == "active" and (b.ha() or {}).get("role") == "passive"
            ),
            60,
        )
        feeder.start()
        for run in range(runs):
            active, passive = (a, b) if (a.ha() or {}).get("role") == "active" else (b, a)
            wait(
                lambda: (
                    (passive.ha() or {}).get("role") == "passive"
                    and not any(p["syncing"] for p in passive.ha()["plans"].values())
                ),
                60,
            )
            time.sleep(1.0)  # a steady stream through the synced pair
            active.kill()
            t0, size0 = time.monotonic(), sink_size(tmp)
            wait(lambda: sink_size(tmp) > size0, 30, step=0.005)
            times.append(time.monotonic() - t0)
            print(
                f"run {run + 1}: kill -9 of {active.name} -> {passive.name} publishing in "
                f"{times[-1]:.2f} s",
                flush=True,
            )
            active.start()  # back as the new passive
    finally:
        stop.set()
        for n in nodes:
            n.kill()
    return times


# -- throughput --
def send_all(targets, n, batch, threads):
    """Send n events in batches from `threads` threads per target (dual-send: every batch to
    each node, the nodes' senders independent of each other, as a client of a pair would)."""
    bodies = [body(i, batch) for i in range(0, n, batch)]

    def worker(url, part):
        conns = {}
        for data in part:
            while post(conns, url, data) != 200:
                time.sleep(0.01)

    parts = [bodies[i::threads] for i in range(threads)]
    ts = [threading.Thread(target=worker, args=(url, p)) for url in targets for p in parts]
    for t in ts:
        t.start()
    for t in ts:
        t.join()


def published(node):
    s = node.status()
    plans = s and s.get("plans") or {}
    plan = plans.get("-1234/HaBench") or {}
    return plan.get("exported", {}).get("Out", {}).get("events", 0)


def one_throughput(kind, n, batch, threads):
    tmp = tempfile.mkdtemp(prefix="habench-")
    open(os.path.join(tmp, "p.siddhiql"), "w").write(PLAN)
    pa, pb = free_port(), free_port()
    if kind == "single":
        nodes = [Node(tmp, "a", pa).start()]
    else:
        fwd = kind == "forward"
        nodes = [
            Node(tmp, "a", pa, pb, fwd, "0.5", "2.0").start(),
            Node(tmp, "b", pb, pa, fwd, "0.5", "2.0").start(),
        ]
    try:
        if kind == "single":
            wait(
                lambda: (
                    "-1234/HaBench/S" in json.dumps((nodes[0].status() or {}).get("receivers", {}))
                ),
                60,
            )
        else:
            wait(
                lambda: (
                    (nodes[0].ha() or {}).get("role") == "active"
                    and (nodes[1].ha() or {}).get("role") == "passive"
                    and not any(p["syncing"] for p in nodes[1].ha()["plans"].values())
                ),
                60,
            )
        targets = [nodes[0].url] if kind != "dual" else [x.url for x in nodes]
        cpu0 = [cpu_seconds(x) for x in nodes]
        t0 = time.monotonic()
        send_all(targets, n, batch, threads)
        wait(lambda: published(nodes[0]) >= n, 300, step=0.05)
        rate = n / (time.monotonic() - t0)
        if kind != "single":  # the passive has taken everything too
            wait(lambda: (nodes[1].ha() or {}).get("queue_events", 1) == 0, 60, step=0.05)
        cpu = [cpu_seconds(x) - c for x, c in zip(nodes, cpu0)]
        return rate, [n / c for c in cpu]
    finally:
        for x in nodes:
            x.kill()


def cpu_seconds(node):
    """User + system CPU seconds of a worker process so far."""
    import psutil

    t = psutil.Process(node.proc.pid).cpu_times()
    return t.user + t.system


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stage", choices=("failover", "throughput", "all"), default="all")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--events", type=int, default=200_000)
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args(argv)
    print(f"load average: {os.getloadavg()}", flush=True)
    if args.stage in ("failover", "all"):
        times = failover_runs(args.runs if args.stage == "failover" else 10)
        print(
            f"fail-over (kill -9 of the active -> passive publishing), {len(times)} runs: "
            f"median {statistics.median(times):.2f} s, min {min(times):.2f}, "
            f"max {max(times):.2f}; goal <= 6 s",
            flush=True,
        )
    if args.stage in ("throughput", "all"):
        rates = {"single": [], "forward": [], "dual": []}
        per_cpu = {"single": [], "forward": [], "dual": []}
        for run in range(args.runs):
            for kind in rates:
                rate, cpu = one_throughput(kind, args.events, args.batch, args.threads)
                rates[kind].append(rate)
                per_cpu[kind].append(cpu)
                print(
                    f"run {run + 1} {kind}: {rate:,.0f} events/s; events per CPU-second "
                    f"of each node: {', '.join(f'{c:,.0f}' for c in cpu)} "
                    f"(load {os.getloadavg()[0]:.1f})",
                    flush=True,
                )
        single_cpu = statistics.median(c[0] for c in per_cpu["single"])
        for kind in ("forward", "dual"):
            act = statistics.median(c[0] for c in per_cpu[kind])
            pas = statistics.median(c[1] for c in per_cpu[kind])
            print(
                f"{kind} pair, events per CPU-second: active {act:,.0f}, passive {pas:,.0f}, "
                f"one worker {single_cpu:,.0f} (active/one worker {act / single_cpu:.2f})",
                flush=True,
            )
        med = {k: statistics.median(v) for k, v in rates.items()}
        for kind in ("forward", "dual"):
            ratios = [p / s for p, s in zip(rates[kind], rates["single"])]
            print(
                f"{kind} pair: median {med[kind]:,.0f} events/s vs one worker "
                f"{med['single']:,.0f}: {statistics.median(ratios):.2f} (same-run pairs "
                f"{', '.join(f'{r:.2f}' for r in ratios)}); goal >= 0.70",
                flush=True,
            )
    print(f"load average: {os.getloadavg()}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
