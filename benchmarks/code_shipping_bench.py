"""Code shipping: archive build time and size, and submit-to-ACTIVE with
topology.code: ship vs path on one embedded cluster, runs alternating.

    .venv/bin/python benchmarks/code_shipping_bench.py --runs 3            # archives + submits
    .venv/bin/python benchmarks/code_shipping_bench.py --archives-only     # no Spark

Archives: the project zip and the packed environment built cold (empty cache) --runs times,
and the cached lookup (hashing the sources, finding the file). Submits: a spout -> bolt
topology submitted and waited for ACTIVE, then killed; the first ship submit pays the
archive build (cold cache), later ones find them cached. The driver's timeline splits each
submit: spark-submit to the Python driver, SparkContext, executors, preflight + tasks ready.
Prints one JSON document with medians.
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from topology import Topology  # noqa: E402
from topology.cluster import ensure_cluster, stop_cluster  # noqa: E402
from topology.launcher import submit  # noqa: E402
from topology.packaging import code_archive, env_archive  # noqa: E402
from topology.spark_settings import load_spark_settings  # noqa: E402


def timed(fn):
    started = time.perf_counter()
    value = fn()
    return time.perf_counter() - started, value


def archive_figures(runs):
    """Cold build time and size of both archives, and the cached lookup time."""
    out = {"code_build_s": [], "env_build_s": [], "code_cached_s": [], "env_cached_s": []}
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as cache:
            secs, code = timed(lambda: code_archive(cache))
            out["code_build_s"].append(secs)
            secs, env = timed(lambda: env_archive(cache))
            out["env_build_s"].append(secs)
            out["code_cached_s"].append(timed(lambda: code_archive(cache))[0])
            out["env_cached_s"].append(timed(lambda: env_archive(cache))[0])
            out["code_bytes"], out["env_bytes"] = code.stat().st_size, env.stat().st_size
    return {
        k: (round(statistics.median(v), 3) if isinstance(v, list) else v) for k, v in out.items()
    }


def topology(name):
    t = Topology(name)
    t.add_spout("s", "topology.testing:CounterSpout", outputs=["n"], config={"rate": 100})
    t.add_bolt("c", "topology.testing:CountBolt", inputs={"s": "shuffle"})
    return t


def one_submit(settings, mode, index):
    started = time.time()
    handle = submit(
        topology(f"Ship{mode}{index}[-1]"), settings.with_overrides({"topology.code": mode})
    )
    try:
        handle.wait_for("ACTIVE", timeout=180)
        status = handle.status()
    finally:
        handle.kill(wait_secs=0, timeout=30)
    line = status["timeline"]
    return {
        "active_s": round(line["tasks_ready"] - started, 2),
        "to_driver_s": round(line["driver_started"] - started, 2),
        "context_s": round(line["context_ready"] - line["driver_started"], 2),
        "executors_s": round(line["executors_ready"] - line["context_ready"], 2),
        "tasks_s": round(line["tasks_ready"] - line["executors_ready"], 2),
    }


def submit_figures(runs):
    with tempfile.TemporaryDirectory() as state:
        settings = load_spark_settings(
            overrides={"spark.state_dir": state, "spark.slots": 4, "checkpoint.interval": 0.0}
        )
        ensure_cluster(settings)
        try:
            results = {"ship_first": one_submit(settings, "ship", 0), "path": [], "ship": []}
            for i in range(runs):
                for mode in ("path", "ship"):
                    results[mode].append(one_submit(settings, mode, i + 1))
        finally:
            stop_cluster(settings)
    for mode in ("path", "ship"):
        runs_ = results[mode]
        results[f"{mode}_median"] = {
            k: round(statistics.median(r[k] for r in runs_), 2) for k in runs_[0]
        }
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--archives-only", action="store_true")
    args = parser.parse_args()
    out = {"load_before": os.getloadavg(), "archives": archive_figures(args.runs)}
    if not args.archives_only:
        out["submits"] = submit_figures(args.runs)
    out["load_after"] = os.getloadavg()
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
