"""Scale-out benchmark on the multi-machine test rig (manager/rig.py): the throughput
of one plan whose work group runs with @dist(parallel=N) over N = 1, 2, 3 Spark workers,
each worker a "machine" (a network namespace on a bridge) pinned to a share of one CPU with
a cgroup (v1 cpu controller, CFS quota: the default `--share 0.25` is a quarter of a core per
machine, so 1, 2, 3 machines have 0.25, 0.5, 0.75 cores between them and the host keeps more
than a core for the CEP worker, the manager and the drivers: the machines, not the host, are
what limits); and the cost of the network hop between two machines against a local one
(ZeroMQ REQ/REP round trips, p50/p99).

The plan: a receiver spout and a publisher bolt (one each) and a partition by room whose
query keeps a length(10) window per room with avg() and count() (the work), parallel N,
fields-grouped by room; its having clause lets no result through, so the publisher side and
the sink cost nothing and the work group is what the machines add. A ZeroMQ client pushes
1,000-event frames as fast as the host's CEP worker takes them (its receiver holds frames
while the inflow is full: back-pressure from the topology); throughput is the work group's
executed events per second (the topology's own metrics) over --windows windows of --seconds
after a warm-up, median reported. The manager, the CEP worker, the Spark master and the
drivers run on the host, unpinned.

Needs root (namespaces, cgroups). Run it when the machine is quiet:
    nice .venv/bin/python benchmarks/scaleout_bench.py --machines 1,2,3 --share 0.25
    nice .venv/bin/python benchmarks/scaleout_bench.py --hop-only
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

T = -1234
PLAN = """@Plan:name('Scale')
@Plan:dist(receiverParallelism='1', publisherParallelism='1')
@Import('Temps:1.0.0')
define stream Temps (room int, temp double);
@Export('Alarm:1.0.0')
define stream Alarm (room int, avgT double, n long);
@dist(parallel='{n}', execGroup='work')
partition with (room of Temps)
begin
  @info(name='stats')
  from Temps#window.length(10)
  select room, avg(temp) as avgT, count() as n
  having avgT > 1000.0
  insert into Alarm;
end;
"""
ROOMS = 256


def _frames(count, size=1000):
    """`count` frames of `size` events, rooms spread evenly, temps below 1 (no alarm)."""
    now = int(time.time() * 1000)
    return [
        [[now, [(f * size + i) % ROOMS, ((f * size + i) % 97) / 100.0]] for i in range(size)]
        for f in range(count)
    ]


class Pusher(threading.Thread):
    """Pushes frames to the worker's ZeroMQ receiver until stopped (blocks on back-pressure)."""

    def __init__(self, url, keys):
        super().__init__(daemon=True)
        from receivers.zmq_receiver import ZmqEventClient

        self.client = ZmqEventClient(url, keys=keys, sndhwm=4, send_timeout_ms=500)
        self.frames, self.halt = _frames(64), threading.Event()

    def run(self):
        import zmq

        i = 0
        while not self.halt.is_set():
            try:
                self.client.send((str(T), "Scale", "Temps"), self.frames[i % len(self.frames)])
                i += 1
            except zmq.Again:
                continue
        self.client.close()


def _work_executed(rig):
    """Events the work group's instances have executed so far (the topology's metrics)."""
    from topology.launcher import get_topology

    handle = get_topology(f"Scale[{T}]", rig.launcher.settings)
    comps = handle.metrics()["components"]
    work = [
        c for name, c in comps.items() if name not in ("EventReceiverSpout", "EventPublisherBolt")
    ]
    return sum(c["executed"] for c in work)


def _throttled(rig):
    """Seconds each machine's cgroup was throttled so far (the quota biting)."""
    out = []
    for m in rig.machines:
        stat = dict(line.split() for line in (m.cgroup / "cpu.stat").read_text().splitlines())
        out.append(int(stat.get("throttled_time", 0)) / 1e9)
    return out


def run_machines(n, share, seconds, windows, warmup, root):
    """Throughput (events/s) of the plan with parallel n on n machines."""
    from manager.rig import Rig, wait_for

    (Path(root) / f"m{n}").mkdir()
    rig = Rig(Path(root) / f"m{n}", machines=n, cpu_share=share)
    try:
        rig.up().start_system(
            worker={
                "receivers.zmq_host": rig.host,
                "receivers.zmq_port": 0,
                "transport.batch_size": 1000,
            }
        )
        rig.manager.plans.add(T, PLAN.format(n=n))

        def ready():
            st = rig.manager.plans.status(T, "Scale")
            inflow = (st.get("inflow") or {}).get("host", {})
            return st["state"] == "ACTIVE" and inflow.get("connected") == 1 and st

        wait_for(ready, 600, f"Scale ACTIVE on {n} machine(s)")
        placement = wait_for(
            lambda: (lambda p: p if sum(map(len, p.values())) == n + 2 else None)(
                rig.manager.plans.status(T, "Scale").get("placement") or {}
            ),
            120,
            "every instance's address reported",
        )
        pusher = Pusher(rig.worker.zmq_url, rig.manager.links.curve)
        pusher.start()
        time.sleep(warmup)
        rates, th0 = [], _throttled(rig)
        for _ in range(windows):
            e0, t0 = _work_executed(rig), time.monotonic()
            time.sleep(seconds)
            e1, t1 = _work_executed(rig), time.monotonic()
            rates.append((e1 - e0) / (t1 - t0))
        throttled = [round(b - a, 1) for a, b in zip(th0, _throttled(rig))]
        counters = rig.worker.router.counters().get(f"{T}/Scale/Temps", {})
        pusher.halt.set()
        pusher.join(10)
        return {
            "machines": n,
            "parallel": n,
            "cpu_share_each": share,
            "median_events_per_s": int(statistics.median(rates)),
            "windows": [int(r) for r in rates],
            "window_s": seconds,
            "throttled_s_per_machine": throttled,
            "worker_accepted": counters.get("accepted"),
            "placement": placement,
            "load": [round(x, 2) for x in os.getloadavg()],
        }
    finally:
        rig.down()


ECHO = """import sys, zmq
s = zmq.Context().socket(zmq.REP)
s.bind(f"tcp://{sys.argv[1]}:{sys.argv[2]}")
print("ready", flush=True)
while True:
    m = s.recv()
    s.send(m)
    if m == b"stop":
        break
"""
PING = """import json, sys, time, zmq
s = zmq.Context().socket(zmq.REQ)
s.connect(sys.argv[1])
msg, n, out = b"x" * 200, int(sys.argv[2]), []
for i in range(200 + n):
    t = time.perf_counter()
    s.send(msg)
    s.recv()
    if i >= 200:
        out.append((time.perf_counter() - t) * 1e6)
s.send(b"stop")
s.recv()
out.sort()
print(json.dumps({"p50_us": out[len(out) // 2], "p99_us": out[int(len(out) * 0.99)]}))
"""


def _ping(server_ns, server_addr, client_ns, n):
    """One run of n round trips from client_ns to an echo server in server_ns."""

    def cmd(ns, *args):
        return (["ip", "netns", "exec", ns] if ns else []) + [sys.executable, *args]

    server = subprocess.Popen(
        cmd(server_ns, "-c", ECHO, server_addr, "5799"), stdout=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout.readline().strip() == "ready"
        out = subprocess.run(
            cmd(client_ns, "-c", PING, f"tcp://{server_addr}:5799", str(n)),
            capture_output=True,
            text=True,
            check=True,
            timeout=300,
        )
        return json.loads(out.stdout)
    finally:
        server.wait(10)


def run_hop(runs, n, root):
    """Round trips between two machines (namespaces on the rig's bridge) and on loopback."""
    from manager.rig import Rig

    rig = Rig(Path(root) / "hop", machines=2).network_up()
    try:
        a, b = rig.machines
        out = {}
        for label, args in (
            ("namespace-to-namespace", (a.ns, a.address, b.ns)),
            ("local (loopback)", (None, "127.0.0.1", None)),
        ):
            res = [_ping(*args, n) for _ in range(runs)]
            out[label] = {
                "rtt_p50_us": round(statistics.median(r["p50_us"] for r in res), 1),
                "rtt_p99_us": round(statistics.median(r["p99_us"] for r in res), 1),
                "runs_p99_us": [round(r["p99_us"], 1) for r in res],
            }
        return {
            "hop": out,
            "round_trips_per_run": n,
            "runs": runs,
            "load": [round(x, 2) for x in os.getloadavg()],
        }
    finally:
        for machine in rig.machines:
            machine.down()
        subprocess.run(["ip", "link", "del", rig.bridge], capture_output=True)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--machines", default="1,2,3", help="machine counts to measure")
    p.add_argument("--share", type=float, default=0.25, help="CPU share of each machine")
    p.add_argument("--seconds", type=float, default=10.0, help="length of one window")
    p.add_argument("--windows", type=int, default=3, help="windows per machine count")
    p.add_argument("--warmup", type=float, default=15.0, help="seconds before measuring")
    p.add_argument("--hop-runs", type=int, default=5)
    p.add_argument("--hop-trips", type=int, default=5000)
    p.add_argument("--hop-only", action="store_true")
    args = p.parse_args(argv)
    from manager.rig import why_not_possible
    import secrets  # the manager and the CEP worker share a cluster secret, as in production

    os.environ.setdefault("CEP_CLUSTER_SECRET", secrets.token_urlsafe(32))
    os.environ.setdefault("CEP_ADMIN_PASSWORD", secrets.token_urlsafe(16))
    reason = why_not_possible()
    if reason:
        sys.exit(f"scaleout_bench: cannot build the rig here: {reason}")
    print(
        json.dumps(
            {
                "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                "machine": f"{platform.machine()}, {os.cpu_count()} cores, "
                f"{platform.python_version()}",
                "load": [round(x, 2) for x in os.getloadavg()],
            }
        ),
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="scaleout") as root:
        results = []
        if not args.hop_only:
            for n in [int(x) for x in args.machines.split(",")]:
                results.append(
                    run_machines(n, args.share, args.seconds, args.windows, args.warmup, root)
                )
                print(json.dumps(results[-1]), flush=True)
            base = max(1, results[0]["median_events_per_s"]) / results[0]["machines"]
            for r in results:
                r["speedup_vs_1"] = round(
                    r["median_events_per_s"] / max(1, results[0]["median_events_per_s"]), 2
                )
                r["per_machine_vs_1"] = round(r["median_events_per_s"] / r["machines"] / base, 2)
            print(
                json.dumps(
                    {
                        "summary": [
                            {
                                k: r[k]
                                for k in (
                                    "machines",
                                    "median_events_per_s",
                                    "speedup_vs_1",
                                    "per_machine_vs_1",
                                )
                            }
                            for r in results
                        ]
                    }
                ),
                flush=True,
            )
        print(json.dumps(run_hop(args.hop_runs, args.hop_trips, root)), flush=True)


if __name__ == "__main__":
    main()
