"""CPU a Spark JVM start takes with and without the start-up options of `spark.jvm_options`.

Runs a one-stage PySpark application (`spark-submit --master local[1]`) several times per
option set, with this machine's class-data sharing archive for the driver role, and prints
the median wall time and CPU-seconds (the submit, its JVM and its Python, from
RUSAGE_CHILDREN): CPU is what a loaded machine, or a test suite starting a hundred JVMs,
pays for.

    .venv/bin/python benchmarks/jvm_start_bench.py --runs 3
"""

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from topology.cluster import SPARK_HOME  # noqa: E402
from topology.jvm_cds import java_options  # noqa: E402
from topology.spark_settings import load_spark_settings  # noqa: E402

APP = """from pyspark import SparkContext
sc = SparkContext(appName="jvm-start-bench")
print(sc.parallelize(range(100), 2).map(lambda x: x * 2).sum())
sc.stop()
"""
OPTION_SETS = {
    "JVM defaults": [],
    "C1 only": ["-XX:TieredStopAtLevel=1"],
    "C1 only, serial GC (spark.jvm_options)": ["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"],
}


def run_once(app: Path, options: list) -> tuple:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    subprocess.run(
        [
            os.path.join(SPARK_HOME, "bin", "spark-submit"),
            "--master",
            "local[1]",
            "--driver-java-options",
            " ".join(options),
            str(app),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=True,
        env=dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable),
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return time.monotonic() - start, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    sharing = java_options(load_spark_settings(), "driver")
    results: dict = {name: [] for name in OPTION_SETS}
    with tempfile.TemporaryDirectory() as tmp:
        app = Path(tmp) / "app.py"
        app.write_text(APP)
        for _ in range(args.runs):  # interleaved: the machine's load hits every set alike
            for name, options in OPTION_SETS.items():
                results[name].append(run_once(app, options + sharing))
    print(f"load average {os.getloadavg()[0]:.1f}; medians of {args.runs} runs")
    base = statistics.median(c for _, c in results["JVM defaults"])
    for name, runs in results.items():
        wall = statistics.median(w for w, _ in runs)
        cpu = statistics.median(c for _, c in runs)
        print(f"{name:40s} wall {wall:5.1f} s   CPU {cpu:5.1f} s   CPU / defaults {cpu / base:.2f}")


if __name__ == "__main__":
    main()
