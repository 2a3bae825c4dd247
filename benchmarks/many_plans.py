"""Many small plans on one machine: memory per plan, deploy time, status of all,
events per second through 10 plans at once, both packing modes side by side in one run; and
the endpoint registry with 100 workers and 1,000 endpoints over real ZeroMQ.

    .venv/bin/python benchmarks/many_plans.py [--steps 1,10,50,100] [--modes shared,app-per-plan]
        [--max-rss-gb 12] [--min-available-gb 6] [--json]
    .venv/bin/python benchmarks/many_plans.py --registry-only

Each plan is a topology of 4 component instances (spout -> 2 pass-through bolts -> counting
bolt, 100 events/s while memory is measured). It runs on its own embedded Spark cluster (own
state dir, 128 slots). For each mode the plans are added step by step (submitted all at once
per step, each timed from submit to ACTIVE); after each step the RSS (and PSS, which counts
pages shared by forked Python workers once) of every process of the cluster is summed: master,
worker, drivers or the pool application, executors, Python workers. "per plan" is (total -
the idle cluster) / plans; "marginal" is the growth per plan added since the previous step.
app-per-plan stops early when our total RSS passes --max-rss-gb or the machine's available
memory falls below --min-available-gb (the machine is shared): the output says so.
Then 10 unthrottled plans run at once for 10 s: events/s summed over their counting bolts.
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from topology.cluster import ensure_cluster, stop_cluster  # noqa: E402
from topology.launcher import get_topology, list_topologies, submit  # noqa: E402
from topology.model import Topology  # noqa: E402
from topology.shared_launch import list_pools  # noqa: E402
from topology.spark_settings import load_spark_settings  # noqa: E402

GB = 1024**3


def plan(name, rate):
    t = Topology(name)
    t.add_spout(
        "nums",
        "topology.testing:CounterSpout",
        outputs=["n"],
        config={"batch_size": 100 if rate else 1000, "rate": rate},
    )
    t.add_bolt(
        "pass",
        "topology.testing:CollectBolt",
        inputs={"nums": "shuffle"},
        parallelism=2,
        outputs=["n"],
    )
    t.add_bolt("count", "topology.testing:CountBolt", inputs={"pass": ["n"]})
    return t


def cluster_processes(settings, cluster):
    """Every process of our cluster: master, worker and their descendants (executors,
    Python workers), plus the spark-submit trees of topologies and pools."""
    roots = list(cluster.pids)
    state = Path(settings["spark.state_dir"])
    for submit_file in list(state.glob("topologies/*/submit.json")) + list(
        state.glob("pools/*/submit.json")
    ):
        info = json.loads(submit_file.read_text())
        if "pool" not in info:
            roots.append(info["pid"])
    procs = {}
    for pid in roots:
        try:
            root = psutil.Process(pid)
            for p in [root, *root.children(recursive=True)]:
                procs[p.pid] = p
        except psutil.Error:
            continue
    return list(procs.values())


def memory(settings, cluster):
    """(RSS bytes, PSS bytes, process count) of the cluster's processes."""
    rss = pss = n = 0
    for p in cluster_processes(settings, cluster):
        try:
            info = p.memory_full_info()
        except psutil.Error:
            continue
        rss, pss, n = rss + info.rss, pss + getattr(info, "pss", info.rss), n + 1
    return rss, pss, n


def deploy(settings, names, rate):
    """Submit all at once; seconds from submit to ACTIVE per plan."""
    started, handles = time.monotonic(), {}
    for name in names:
        handles[name] = submit(plan(name, rate), settings)
    times = {}
    deadline = time.monotonic() + 900
    while len(times) < len(handles) and time.monotonic() < deadline:
        for name, handle in handles.items():
            if name not in times:
                status = handle.status()["status"]
                if status == "ACTIVE":
                    times[name] = time.monotonic() - started
                elif status in ("FAILED", "KILLED"):
                    raise RuntimeError(f"{name}: {handle.status()}")
        time.sleep(0.5)
    if len(times) < len(handles):
        raise RuntimeError(f"only {len(times)} of {len(handles)} plans ACTIVE in 900 s")
    return [times[n] for n in names], time.monotonic() - started


def status_all(settings, names):
    """Seconds to read the status of every plan (as `cep topology list` and the manager do)."""
    started = time.monotonic()
    rows = list_topologies(settings)
    listed = time.monotonic()
    for name in names:
        get_topology(name, settings).status()
    return listed - started, time.monotonic() - listed, len(rows)


def kill_all(settings):
    """Kill every running plan, 16 at a time."""
    from concurrent.futures import ThreadPoolExecutor

    names = [s["name"] for s in list_topologies(settings)]
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda n: get_topology(n, settings).kill(wait_secs=0, timeout=30), names))


def throughput(settings, count=10, seconds=10.0):
    """Events/s summed over the counting bolts of `count` unthrottled plans."""
    names = [f"Fast{i}[-1234]" for i in range(count)]
    deploy(settings, names, rate=0)
    handles = [get_topology(n, settings) for n in names]

    def total():
        return sum(h.metrics()["components"]["count"]["executed"] for h in handles)

    time.sleep(3)
    first, t0 = total(), time.monotonic()
    time.sleep(seconds)
    last, t1 = total(), time.monotonic()
    for h in handles:
        h.kill(wait_secs=0, timeout=30)
    return (last - first) / (t1 - t0)


def measure_step(settings, cluster, step, deployed, base, prev):
    """Deploy plans up to `step` (all at once) and measure memory, deploy and status times."""
    names = [f"P{i}[-1234]" for i in range(len(deployed), step)]
    times, wall = deploy(settings, names, rate=100)
    deployed += names
    time.sleep(5)  # let the Python workers and JVMs settle
    rss, pss, nproc = memory(settings, cluster)
    list_s, each_s, listed = status_all(settings, deployed)
    added, mb = step - prev[2], 2**20
    return {
        "plans": step,
        "processes": nproc,
        "rss": rss,
        "pss": pss,
        "rss_total_mb": round(rss / mb),
        "pss_total_mb": round(pss / mb),
        "rss_per_plan_mb": round((rss - base[0]) / step / mb),
        "pss_per_plan_mb": round((pss - base[1]) / step / mb),
        "rss_marginal_mb": round((rss - prev[0]) / added / mb),
        "pss_marginal_mb": round((pss - prev[1]) / added / mb),
        "deploy_wall_s": round(wall, 1),
        "deploy_median_s": round(statistics.median(times), 1),
        "deploy_per_plan_s": round(wall / added, 2),
        "list_all_s": round(list_s, 3),
        "status_each_s": round(each_s, 3),
        "listed": listed,
        "load": os.getloadavg()[0],
    }


def run_mode(mode, args, root):
    settings = load_spark_settings(
        overrides={
            "spark.state_dir": str(root / mode),
            "spark.slots": 128,
            "spark.worker_memory": "20g",
            "topology.packing": mode,
            "topology.pool_slots": 120,
            "checkpoint.interval": 0.0,
            "topology.metrics_interval_s": 2.0,
            "topology.idle_sleep_ms": 20.0,
        }
    )
    cluster = ensure_cluster(settings)
    out = {"mode": mode, "steps": [], "stopped_early": None}
    try:
        time.sleep(2)
        base_rss, base_pss, _ = memory(settings, cluster)
        out["idle_cluster_rss_mb"] = round(base_rss / 2**20)
        deployed, prev = [], (base_rss, base_pss, 0)
        for step in args.steps:
            per_plan = (prev[0] - base_rss) / prev[2] if prev[2] else 0
            stop = _too_big(prev[0] + per_plan * (step - prev[2]), args)
            if stop:
                out["stopped_early"] = f"before {step} plans: {stop}"
                break
            out["steps"].append(
                measure_step(settings, cluster, step, deployed, (base_rss, base_pss), prev)
            )
            print(json.dumps({"mode": mode, **out["steps"][-1]}), flush=True)
            prev = (out["steps"][-1]["rss"], out["steps"][-1]["pss"], step)
        kill_all(settings)
        time.sleep(3)
        stop = _too_big(
            out["steps"][0]["rss_per_plan_mb"] * 10 * 2**20 if out["steps"] else 0, args
        )
        if stop:
            out["events_per_s_10_plans"] = None
            print(json.dumps({"mode": mode, "throughput_skipped": stop}), flush=True)
            return out
        out["events_per_s_10_plans"] = round(throughput(settings))
        print(
            json.dumps(
                {
                    "mode": mode,
                    "events_per_s_10_plans": out["events_per_s_10_plans"],
                    "load": os.getloadavg()[0],
                }
            ),
            flush=True,
        )
    except Exception as exc:  # noqa: BLE001 - report it, and run the other mode
        out["error"] = f"{type(exc).__name__}: {exc}"
        print(json.dumps({"mode": mode, "error": out["error"]}), flush=True)
    finally:
        for pool in list_pools(settings):
            pool.stop()
        kill_all(settings)
        stop_cluster(settings)
    return out


def _too_big(rss, args):
    """Why the next step must not run: its estimated RSS, or the machine's free memory."""
    available = psutil.virtual_memory().available
    if rss > args.max_rss_gb * GB:
        return (
            f"it would take about {rss / GB:.1f} GB RSS (limit --max-rss-gb "
            f"{args.max_rss_gb}; the machine is shared)"
        )
    if available < args.min_available_gb * GB:
        return (
            f"the machine has {available / GB:.1f} GB available "
            f"(limit --min-available-gb {args.min_available_gb})"
        )
    return None


def registry_bench(workers=100, endpoints=1000, lookups=5000):
    """Lookup latency over real ZeroMQ with `workers` workers and `endpoints` endpoints."""
    from cep.protocol.registry_client import RegistryClient
    from manager.registry.service import RegistryService

    service = RegistryService(port=0, bind_host="127.0.0.1")
    service.start()
    client = RegistryClient(f"tcp://127.0.0.1:{service.port}")
    try:
        plans = endpoints // 10
        for i in range(endpoints):
            kind = "receiver" if i % 2 == 0 else "publisher"
            client.register(
                kind,
                -1234,
                f"Plan{i // 10}",
                "127.0.0.1",
                20000 + i,
                streams=["S"],
                worker=f"w{i % workers}",
            )
        for w in range(workers):
            client.worker_info(worker=f"w{w}", host="127.0.0.1")
        times = []
        for n in range(lookups):
            started = time.perf_counter()
            client.lookup("receiver", -1234, f"Plan{n % plans}", stream="S")
            times.append((time.perf_counter() - started) * 1000)
        times.sort()
        return {
            "workers": workers,
            "endpoints": len(service.table.endpoints),
            "lookups": lookups,
            "p50_ms": round(times[len(times) // 2], 3),
            "p99_ms": round(times[int(len(times) * 0.99)], 3),
            "max_ms": round(times[-1], 3),
            "load": os.getloadavg()[0],
        }
    finally:
        client.close()
        service.stop()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", default="1,10,50,100")
    parser.add_argument("--modes", default="shared,app-per-plan")
    parser.add_argument("--max-rss-gb", type=float, default=12.0)
    parser.add_argument("--min-available-gb", type=float, default=6.0)
    parser.add_argument("--registry-only", action="store_true")
    parser.add_argument("--registry-runs", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    args.steps = [int(s) for s in args.steps.split(",")]
    results = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "registry": [registry_bench() for _ in range(args.registry_runs)],
    }
    print(json.dumps({"registry": results["registry"]}), flush=True)
    if not args.registry_only:
        with tempfile.TemporaryDirectory(prefix="many-plans-") as tmp:
            results["modes"] = [run_mode(m, args, Path(tmp)) for m in args.modes.split(",")]
    if args.json:
        print(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
