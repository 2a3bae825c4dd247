"""Submit topologies to Spark and control them: submit, handle, list.

    handle = submit(topology)              # returns at once (spark-submit, client mode)
    handle.wait_for("ACTIVE", timeout=60)
    handle.metrics()                       # per component and instance, Storm UI names
    handle.deactivate(); handle.activate()
    handle.kill(wait_secs=5)               # deactivate, drain, stop the app, free its slots

Each topology gets a run directory ``<state_dir>/topologies/<name>/`` with its spec, the
launch options, the driver log, ``driver.json`` (the driver's control endpoint) and, once it
ended, ``final.json``.
"""

import json
import os
import subprocess
import time

# the pieces shared with shared_launch.py and submit_command.py (re-exported here)
from topology.app_conf import SPARKAPP, _write_private, run_dir_name, spark_conf  # noqa: F401
from topology.checkpoint.coordinator import checkpoint_options
from topology.cluster import SPARK_HOME, ensure_cluster
from topology.control import TopologyHandle, new_control_secret, private_dir, run_dir_alive
from topology.driver import executors_needed
from topology.exceptions import LaunchError, TopologyExistsError, TopologyNotFoundError
from topology.shipping import resolve as resolve_shipping
from topology.spark_settings import load_spark_settings, state_dir


def topologies_dir(settings):
    path = state_dir(settings) / "topologies"
    path.mkdir(parents=True, exist_ok=True)
    return path


def submit(topology, settings=None, overrides=None, security=None):
    """Validate and submit; returns a TopologyHandle at once (status SUBMITTED).
    `security` (cep.security.curve.LinkSecurity): CURVE keys and cluster secret of the
    topology's links; they travel in launch.json (mode 0600) and the task closure, never
    on the spark-submit command line."""
    settings = settings or load_spark_settings()
    if overrides:
        settings = settings.with_overrides(overrides)
    topology.validate(for_spark=True)
    cluster = ensure_cluster(settings)
    run_dir = topologies_dir(settings) / run_dir_name(topology.name)
    if run_dir_alive(run_dir):
        raise TopologyExistsError(
            f"topology {topology.name!r} is already running (kill it first; state in {run_dir})"
        )
    private_dir(run_dir)  # 0700: launch.json holds the keys and the control secret
    for stale in ("driver.json", "final.json", "submit.json"):
        (run_dir / stale).unlink(missing_ok=True)
    executors, cores = executors_needed(
        topology.total_parallelism, settings["topology.workers"], settings["topology.spare_workers"]
    )
    launch = _launch_options(settings, cluster, executors)
    launch["instances_per_task"] = settings["topology.instances_per_task"]
    launch["control_secret"] = new_control_secret()
    if security is not None:
        launch["options"]["security"] = security.to_options()
    launch["options"]["checkpoint"] = checkpoint_options(
        settings, topology.name, topology.to_dict(), state_dir(settings)
    )
    shipping = resolve_shipping(settings)  # how executors get code and Python
    launch["preflight"] = shipping.preflight()
    (run_dir / "spec.json").write_text(topology.to_json(indent=1))
    _write_private(run_dir / "launch.json", json.dumps(launch, indent=1))
    if settings["topology.packing"] == "shared":  # one application hosts many
        from topology.shared_launch import submit_to_pool

        return submit_to_pool(topology, settings, cluster, run_dir, security)
    cmd = _spark_submit_command(
        topology.name, settings, cluster, executors, cores, run_dir, shipping
    )
    python = shipping.driver_python
    env = dict(
        os.environ,
        SPARK_HOME=SPARK_HOME,
        PYSPARK_PYTHON=python,
        PYSPARK_DRIVER_PYTHON=python,
        SPARK_LOCAL_IP=settings["spark.host"],
    )
    with open(run_dir / "driver.log", "ab") as log:
        try:
            proc = subprocess.Popen(
                cmd,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                start_new_session=True,
            )
        except OSError as exc:
            raise LaunchError(f"cannot run spark-submit for {topology.name!r}: {exc}") from None
    (run_dir / "submit.json").write_text(
        json.dumps(
            {
                "pid": proc.pid,
                "submitted": time.time(),
                "name": topology.name,
                "master": cluster.master_url,
                "master_ui": cluster.ui_url,
            }
        )
    )
    return TopologyHandle(topology.name, run_dir, process=proc)


def _launch_options(settings, cluster, executors):
    return {
        "host": settings["spark.host"],
        "master_ui_url": cluster.ui_url,
        "executors": executors,
        "kill_wait_secs": settings["topology.kill_wait_secs"],
        "stop_timeout_s": settings["topology.stop_timeout_s"],
        "master_lost_s": settings["topology.master_lost_s"],
        "task_silence_s": settings["topology.task_silence_s"],
        # the embedded cluster's master and worker pids: their end is seen at once
        "cluster_pids": list(cluster.pids) if cluster.embedded else [],
        "max_restarts": settings["topology.max_restarts"],
        "restart_window_s": settings["topology.restart_window_s"],
        "options": {
            "host": settings["spark.host"],
            "queue_batches": settings["topology.queue_batches"],
            "socket_buffer": settings["topology.socket_buffer_kb"] * 1024,
            "metrics_interval_s": settings["topology.metrics_interval_s"],
            "idle_sleep_ms": settings["topology.idle_sleep_ms"],
        },
    }


def _spark_submit_command(name, settings, cluster, executors, cores, run_dir, shipping=None):
    cmd = [
        os.path.join(SPARK_HOME, "bin", "spark-submit"),
        "--master",
        cluster.master_url,
        "--deploy-mode",
        "client",
        "--name",
        name,
        "--driver-memory",
        settings["spark.driver_memory"],
    ]
    for key, value in spark_conf(settings, executors, cores, shipping).items():
        cmd += ["--conf", f"{key}={value}"]
    return cmd + [str(SPARKAPP), str(run_dir)]


def get_topology(name, settings=None):
    """The handle of a known topology (running or ended) by name."""
    settings = settings or load_spark_settings()
    run_dir = topologies_dir(settings) / run_dir_name(name)
    if not (run_dir / "submit.json").exists():
        raise TopologyNotFoundError(f"no topology named {name!r} in {run_dir.parent}")
    return _handle(name, run_dir)


def _handle(name, run_dir):
    """A topology's handle: its own application's, or a shared application's."""
    try:
        shared = "pool" in json.loads((run_dir / "submit.json").read_text())
    except (OSError, ValueError):
        shared = False
    if shared:
        from topology.shared_launch import SharedTopologyHandle

        return SharedTopologyHandle(name, run_dir)
    return TopologyHandle(name, run_dir)


def list_topologies(settings=None, include_ended=False):
    """Status dicts of the topologies in this state_dir (running ones unless include_ended)."""
    settings = settings or load_spark_settings()
    out = []
    for run_dir in sorted(topologies_dir(settings).iterdir()):
        submit_file = run_dir / "submit.json"
        if not submit_file.exists():
            continue
        handle = _handle(json.loads(submit_file.read_text())["name"], run_dir)
        status = handle.status()
        if include_ended or status["status"] not in ("KILLED", "FAILED") or run_dir_alive(run_dir):
            out.append(status)
    return out
