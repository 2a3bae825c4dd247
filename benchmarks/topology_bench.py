"""Benchmark the topology runtime on the embedded Spark cluster; prints medians as JSON.

    .venv/bin/python benchmarks/topology_bench.py [--runs 3] [--events 3000000]

Scenarios (spout -> pass-through bolt -> counting bolt, 1,000-event batches):
  max-shuffle   as fast as possible, shuffle grouping
  max-fields    as fast as possible, fields grouping (one instance per bolt: no hashing)
  max-fields-x2 as fast as possible, fields grouping over 2 instances per bolt (hashing)
  rate-100k     100,000 events/s, shuffle grouping (latency at a steady rate)
Each run submits a fresh topology (so submit_to_active_s is measured every time) and kills it.
"""

import argparse
import json
import platform
import statistics
import sys
import time

import psutil

from topology.bench import run_bench
from topology.cluster import recorded_cluster, stop_cluster
from topology.spark_settings import load_spark_settings


def scenarios(events):
    return {
        "max-shuffle": dict(events=events, grouping="shuffle"),
        "max-fields": dict(events=events, grouping="fields"),
        "max-fields-x2": dict(events=events, grouping="fields", parallelism=2),
        "rate-100k": dict(events=min(events, 1_500_000), grouping="shuffle", rate=100_000),
    }


def median_of(runs, key, sub=None):
    values = [(r[key][sub] if sub else r[key]) for r in runs]
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--events", type=int, default=3_000_000)
    parser.add_argument("--only", choices=sorted(scenarios(1)), action="append")
    args = parser.parse_args(argv)
    settings = load_spark_settings()
    ours = settings["spark.master"] == "embedded" and recorded_cluster(settings) is None
    try:
        report = run_scenarios(args, settings)
    finally:
        if ours:  # leave a cluster that was already running, stop the one we started
            stop_cluster(settings)
    print(json.dumps(report, indent=1))
    return 0


def run_scenarios(args, settings):
    report = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": f"{psutil.cpu_count()} cores, "
        f"{round(psutil.virtual_memory().total / 2**30)} GiB, "
        f"{platform.system()} {platform.release()}, Python "
        f"{platform.python_version()}",
        "load_avg_start": [round(x, 1) for x in psutil.getloadavg()],
        "scenarios": {},
    }
    for name, params in scenarios(args.events).items():
        if args.only and name not in args.only:
            continue
        runs = [run_bench(settings=settings, **params) for _ in range(args.runs)]
        for run in runs:
            print(name, json.dumps(run), file=sys.stderr, flush=True)
        report["scenarios"][name] = {
            "runs": len(runs),
            "exact": all(r["events_sent"] == r["events_received"] for r in runs),
            "events_per_s": median_of(runs, "events_per_s"),
            "latency_p50_ms": median_of(runs, "latency_ms", "p50"),
            "latency_p99_ms": median_of(runs, "latency_ms", "p99"),
            "submit_to_active_s": median_of(runs, "submit_to_active_s"),
        }
    report["load_avg_end"] = [round(x, 1) for x in psutil.getloadavg()]
    return report


if __name__ == "__main__":
    sys.exit(main())
