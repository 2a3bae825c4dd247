"""Manager fail-over time: leader death -> a follower serving writes.

Two `cep manager` processes share a redis-server of the script's own (a group, lease TTL
`--ttl`, default 10 s as shipped). Each run kills the leader with SIGKILL and then, every
50 ms, POSTs a new plan to the follower directly; the figure is the time from the kill to
the follower's `201 Created` (the plan stored with the follower's fencing token). The killed
manager is started again and joins as the follower, so the runs alternate between the two.

Spark is not involved: the write path (plan store, fencing, version) does not need it, so the
managers point at an unreachable master (their deploy threads retry in the background). The
figure therefore measures lease expiry + election round + the new leader's take-over (compile
and adopt the stored plans) + the first write, not a topology's redeploy (which fail-over
never does: running topologies are adopted).

    .venv/bin/python benchmarks/failover_bench.py --runs 10 [--ttl 10]
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from manager.testing import ManagerProc, free_port, http, login  # noqa: E402

PLAN = """@Plan:name('{name}')
@Import('S:1.0.0')
define stream S (v int);
@Export('F:1.0.0')
define stream F (v int);
from S[v > 0] select v insert into F;
"""
PASSWORD = "bench-admin-password"


def redis_server(workdir):
    binary = shutil.which("redis-server")
    if binary is None:
        sys.exit("redis-server is needed (apt-get install redis-server)")
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
            workdir,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    time.sleep(0.5)
    return proc, f"redis://127.0.0.1:{port}/0"


def role(m, token):
    return m.me(token, timeout=2).get("role")


def one_run(leader, follower, token, n):
    """Seconds from the leader's SIGKILL to the follower's 201 for a new plan."""
    leader.kill()
    killed = time.monotonic()
    attempt, answer = 0, None
    while True:
        attempt += 1  # a new name each try: a try that timed out may still have been stored
        body = PLAN.format(name=f"Bench{n}x{attempt}")
        try:
            code, _, answer = http(
                "POST",
                f"{follower.url}/api/v1/tenants/-1234/plans",
                body,
                token=token,
                content_type="text/plain",
                timeout=5,
            )
        except OSError as exc:
            code, answer = None, exc
        if code == 201:
            return time.monotonic() - killed
        if time.monotonic() - killed > 120:
            raise RuntimeError(f"no write accepted within 120 s (last answer {code}: {answer})")
        time.sleep(0.05)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--ttl", type=float, default=10.0, help="ha.lease_ttl (default 10 s)")
    args = ap.parse_args()
    os.environ["CEP_ADMIN_PASSWORD"] = PASSWORD
    os.environ.setdefault("CEP_CLUSTER_SECRET", "bench-cluster-secret")
    root = tempfile.mkdtemp(prefix="failover-bench-")
    redis_proc, url = redis_server(root)
    env = {"CEP_METRICS_SAMPLE_INTERVAL": "0", "CEP_TOPOLOGY_RESUBMIT_INTERVAL": "30"}
    master = f"spark://127.0.0.1:{free_port()}"  # nothing listens: no Spark in this figure
    managers = [
        ManagerProc(n, root, url, "bench", args.ttl, spark_master=master, env=env)
        for n in ("a", "b")
    ]
    times = []
    try:
        for m in managers:
            m.start()
        token = login(managers[0].url, PASSWORD)
        for n in range(args.runs):
            leader, follower = managers if role(managers[0], token) == "leader" else managers[::-1]
            took = one_run(leader, follower, token, n)
            times.append(took)
            print(
                f"run {n + 1}: leader {leader.name} killed -> {follower.name} accepted a "
                f"write after {took:.2f} s",
                flush=True,
            )
            leader.start()  # joins as the follower
            deadline = time.monotonic() + 30
            while role(leader, token) != "follower" and time.monotonic() < deadline:
                time.sleep(0.1)
    finally:
        for m in managers:
            m.stop()
        redis_proc.terminate()
        redis_proc.wait(timeout=10)
        shutil.rmtree(root, ignore_errors=True)
    times.sort()
    print(
        f"lease_ttl {args.ttl:g} s, {len(times)} runs: min {times[0]:.2f} s, median "
        f"{statistics.median(times):.2f} s, p90 {times[int(0.9 * (len(times) - 1))]:.2f} s, "
        f"max {times[-1]:.2f} s (goal <= 15 s); load {os.getloadavg()[0]:.1f}"
    )


if __name__ == "__main__":
    main()
