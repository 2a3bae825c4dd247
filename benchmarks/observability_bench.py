"""Benchmark the manager's observability side; prints medians, then one JSON line.

    .venv/bin/python benchmarks/observability_bench.py [--runs 5] [--plans 200]

A real manager (store, compiler, registry, REST app, metrics history, Prometheus registry)
with `--plans` deployed plans on console_bench's fake launcher (topologies ACTIVE at once,
metrics answered in-process), so that only the manager's own work is timed:
  sample-all    one MetricsSampler round over every plan (history + latency histogram)
  prometheus    GET /metrics (text exposition of every plan's components and instances)
  window-1d     GET .../metrics?window=1d of a plan holding a full day of 10 s samples
  plans-api     GET /api/v1/tenants/-1234/plans (status and statusText of every plan)
Each figure is the median of --requests calls in one run (after 3 warm-ups); the printed
figure is the median of --runs runs.
"""

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from console_bench import TENANT, FakeSparkMaster, start_manager  # noqa: E402


def timed(fn, requests):
    for _ in range(3):
        fn()
    times = []
    for _ in range(requests):
        start = time.perf_counter()
        fn()
        times.append(1000 * (time.perf_counter() - start))
    return statistics.median(times)


def fill_day(m, key):
    """A day of 10 s samples for one plan (what a day-old topology's history holds)."""
    m.history.forget(key)  # the samples of the timed rounds are newer than this day
    handle = m.topologies.deployments[key].handle
    comps = handle.metrics()["components"]
    now = time.time()
    for i in range(24 * 360):
        for c in comps.values():
            for inst in c["instances"]:
                inst["executed"] = inst["emitted"] = inst["transferred"] = 100 * i
            c["executed"] = c["emitted"] = c["transferred"] = 100 * i * len(c["instances"])
        m.history.record(key, comps, now=now - 86400 + 10 * i)


def one_run(tmp, master, args):
    from manager.web import create_app

    m = start_manager(Path(tmp), master, args.plans)
    try:
        client = create_app({"MANAGER": m, "TESTING": True}).test_client()
        auth = getattr(m, "auth", None)
        if auth is not None:  # an admin token on every request
            client.environ_base["HTTP_AUTHORIZATION"] = (
                f"Bearer {auth.create_token('admin', 'bench')[0]}"
            )
        out = {"sample_all_ms": timed(m.sampler.sample_all, args.requests)}
        out["prometheus_ms"] = timed(lambda: client.get("/metrics"), args.requests)
        text = client.get("/metrics").get_data(as_text=True)
        out["prometheus_kb"] = round(len(text) / 1024, 1)
        key = (TENANT, "Plan000")
        fill_day(m, key)
        url = f"/api/v1/tenants/{TENANT}/plans/Plan000/metrics?window=1d"
        assert client.get(url).status_code == 200
        out["window_1d_ms"] = timed(lambda: client.get(url), args.requests)
        out["samples_kept_per_plan"] = sum(len(t) for t in m.history.series[key].tiers)
        plans = f"/api/v1/tenants/{TENANT}/plans"
        assert len(client.get(plans).get_json()["plans"]) == args.plans
        out["plans_api_ms"] = timed(lambda: client.get(plans), args.requests)
        return out
    finally:
        m.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--plans", type=int, default=200)
    ap.add_argument("--requests", type=int, default=20)
    args = ap.parse_args()
    master = FakeSparkMaster(apps=args.plans)
    runs = []
    try:
        for i in range(args.runs):
            with tempfile.TemporaryDirectory() as tmp:
                runs.append(one_run(tmp, master, args))
            print(f"run {i + 1}: {json.dumps(runs[-1])}", flush=True)
    finally:
        master.stop()
    medians = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    print(f"\nmedians of {args.runs} runs ({args.requests} calls each; {args.plans} plans)")
    for k, v in medians.items():
        print(f"  {k:<24} {v:10.3f}")
    print(
        json.dumps(
            {
                "bench": "observability",
                "runs": args.runs,
                "medians": medians,
                "load_avg": os.getloadavg(),
                "python": platform.python_version(),
                "cpus": os.cpu_count(),
                "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            }
        )
    )


if __name__ == "__main__":
    main()
