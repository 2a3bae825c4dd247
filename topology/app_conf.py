"""What every topology application is made of, whether it runs alone (launcher.py), in a
shared application (shared_launch.py) or from a rendered command (submit_command.py): the
driver script, its run directory's name, its private files and its Spark properties."""

import os
import re
import shlex
import zlib
from pathlib import Path

from topology.jvm_options import jvm_options
from topology.shipping import resolve as resolve_shipping

SPARKAPP = Path(__file__).resolve().parent / "sparkapp.py"


def run_dir_name(name):
    """A file-system-safe, collision-free directory name for a topology name."""
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", name)[:80]
    return f"{safe}-{zlib.crc32(name.encode()):08x}"


def _write_private(path, text):
    """Write a file only its owner may read (0600, also when it existed before)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)


def spark_conf(settings, executors, cores, shipping=None):
    """The Spark properties of a topology application; `shipping` (topology/shipping.py,
    resolved from the settings when None) says how executors get the code and Python."""
    shipping = shipping or resolve_shipping(settings)
    host = settings["spark.host"]
    attempts = str(settings["topology.max_stage_attempts"])
    conf = {
        "spark.executor.cores": str(cores),
        "spark.cores.max": str(cores * executors),
        "spark.task.cpus": "1",
        "spark.executor.memory": settings["spark.executor_memory"],
        "spark.dynamicAllocation.enabled": "false",
        # we wait for the executors ourselves (reporting WAITING_FOR_SLOTS) before the stage
        "spark.scheduler.minRegisteredResourcesRatio": "1.0",
        "spark.scheduler.maxRegisteredResourcesWaitingTime": "1s",
        "spark.scheduler.barrier.maxConcurrentTasksCheck.interval": "1s",
        "spark.scheduler.barrier.maxConcurrentTasksCheck.maxFailures": "1000",
        "spark.stage.maxConsecutiveAttempts": attempts,
        "spark.task.maxFailures": attempts,
        "spark.locality.wait": "0s",
        "spark.driver.host": host,
        "spark.driver.bindAddress": host,
        "spark.ui.port": "0",
        "spark.ui.showConsoleProgress": "false",
        **shipping.spark_conf(),
    }
    local = shipping.mode == "path"  # executors on this machine: bind where the cluster does
    java = {
        "spark.driver.extraJavaOptions": jvm_options(settings, "driver"),
        "spark.executor.extraJavaOptions": jvm_options(settings, "executor", local=local),
    }
    if local:
        conf["spark.executorEnv.SPARK_LOCAL_IP"] = host
    for key, options in java.items():
        if options:
            conf[key] = shlex.join(options)
    for item in settings["spark.conf"]:
        key, _, value = item.partition("=")
        key, value = key.strip(), value.strip()
        # the operator's JVM options come after ours (a later -XX flag wins)
        conf[key] = f"{conf[key]} {value}" if key in java and key in conf else value
    return conf
