"""The settings of conf/spark.yaml: the Spark cluster and how topologies run on it."""

from pathlib import Path
from typing import Any, Mapping, Optional, Union

from cep.protocol.settings import Schema, Setting, Settings

PROJECT_ROOT = Path(__file__).resolve().parent.parent

SPARK = Schema(
    "spark",
    [
        Setting(
            "spark",
            "master",
            str,
            "embedded",
            "`embedded` starts a one-machine standalone master+worker on loopback; "
            "or `spark://host:port` of an existing cluster",
        ),
        Setting("spark", "slots", int, 16, "embedded worker cores (task slots; may exceed CPUs)"),
        Setting("spark", "worker_memory", str, "8g", "memory the embedded worker offers"),
        Setting(
            "spark", "executor_memory", str, "512m", "spark.executor.memory per topology executor"
        ),
        Setting(
            "spark", "driver_memory", str, "512m", "spark.driver.memory of each topology driver"
        ),
        Setting(
            "spark", "python", str, "", "Python for drivers and executors (empty: this Python)"
        ),
        Setting(
            "spark", "host", str, "127.0.0.1", "address the cluster, drivers and tasks bind to"
        ),
        Setting(
            "spark", "state_dir", str, "", "cluster and topology state (empty: <project>/var/spark)"
        ),
        Setting("spark", "master_port", int, 0, "embedded master port (0: a free port)"),
        Setting("spark", "master_ui_port", int, 0, "embedded master web UI port (0: a free port)"),
        Setting(
            "spark",
            "master_ui_url",
            str,
            "",
            "master web UI for an external master (empty: http://<master host>:8080)",
        ),
        Setting("spark", "python_path", list, [], "extra PYTHONPATH entries for executors"),
        Setting("spark", "conf", list, [], "extra Spark properties as key=value"),
        Setting(
            "spark",
            "cds_dir",
            str,
            "",
            "class-data sharing archives that make Spark JVMs start 2x faster (empty: "
            "~/.cache/sparkcep/cds; `off`: none); see topology/jvm_cds.py",
        ),
        Setting(
            "spark",
            "jvm_options",
            str,
            "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
            "JVM options of the embedded master and worker and of every topology's driver and "
            "executors (their JVMs only orchestrate: C1-only compiling takes about 40% less CPU "
            "to start them); empty: the JVM's defaults; see topology/jvm_options.py",
        ),
        Setting(
            "topology",
            "code",
            str,
            "auto",
            "how executors get the project: `ship` (a zip of its packages with each application, "
            "spark.submit.pyFiles, and its Python dependencies as a packed environment, "
            "spark.archives), `path` (this checkout and this Python: one machine only), "
            "`auto` (path for the embedded cluster, ship for any other master)",
            choices=("auto", "ship", "path"),
        ),
        Setting(
            "topology",
            "executor_python",
            str,
            "",
            "with code ship: the Python every executor runs, which the cluster has given the "
            "dependencies (then no environment is shipped); empty: ship the packed environment",
        ),
        Setting(
            "topology",
            "env_python",
            str,
            "",
            "with the packed environment: the CPython (this version) executors run it with "
            "(empty: this Python's base interpreter path, else pythonX.Y on the worker's PATH)",
        ),
        Setting(
            "topology",
            "workers",
            int,
            1,
            "executors per topology (Storm topology.workers); tasks are spread evenly",
        ),
        Setting(
            "topology",
            "spare_workers",
            int,
            0,
            "executors a topology may lose and still run every task on the others at once: "
            "each executor gets ceil(tasks / (workers - spare)) cores, so when a machine dies "
            "the stage re-runs on the surviving executors without waiting for a new one "
            "(costs that many executors' cores, idle until then)",
        ),
        Setting(
            "topology",
            "max_stage_attempts",
            int,
            10,
            "spark.stage.maxConsecutiveAttempts: restarts of a failed topology stage",
        ),
        Setting(
            "topology",
            "max_restarts",
            int,
            10,
            "restart rate: a topology restarted (stage retry or resubmitted job) more than this "
            "within topology.restart_window_s is FAILED; below it, it restarts for ever",
        ),
        Setting(
            "topology",
            "restart_window_s",
            float,
            300.0,
            "the window of topology.max_restarts, in seconds",
        ),
        Setting(
            "topology",
            "queue_batches",
            int,
            64,
            "ZeroMQ high-water mark per link, in batches (bounded queues = backpressure)",
        ),
        Setting(
            "topology",
            "socket_buffer_kb",
            int,
            256,
            "kernel send/receive buffer per link (bounds the bytes queued beyond the HWM)",
        ),
        Setting("topology", "metrics_interval_s", float, 1.0, "how often instances report metrics"),
        Setting("topology", "idle_sleep_ms", float, 1.0, "spout pause after an empty next_batch()"),
        Setting(
            "topology",
            "kill_wait_secs",
            float,
            30.0,
            "default drain time of kill (Storm topology.message.timeout.secs)",
        ),
        Setting(
            "topology",
            "master_lost_s",
            float,
            30.0,
            "a topology whose Spark master's web UI stays unreachable this long is FAILED",
        ),
        Setting(
            "topology",
            "task_silence_s",
            float,
            0.0,
            "a task on another machine not heard from this long (its heartbeat thread reports "
            "every metrics interval) fails its stage attempt: a machine that died without "
            "closing its connections or is cut off is seen before spark.worker.timeout "
            "(60 s); with topology.spare_workers the stage re-runs on the others at once; "
            "0: off (Spark's own detection)",
        ),
        Setting(
            "topology",
            "stop_timeout_s",
            float,
            15.0,
            "after the drain, how long tasks get to stop before the job is cancelled",
        ),
        Setting(
            "topology",
            "packing",
            str,
            "app-per-plan",
            "app-per-plan: one Spark application per topology (isolates best); shared: one "
            "long-running application per pool hosts many topologies",
            choices=("app-per-plan", "shared"),
        ),
        Setting(
            "topology",
            "pool",
            str,
            "tenant",
            "shared packing: `tenant` gives each tenant its own application; any other "
            "name puts every topology in that one pool",
        ),
        Setting(
            "topology",
            "pool_slots",
            int,
            64,
            "shared packing: task slots (executor cores) of a pool's application",
        ),
        Setting(
            "topology",
            "instances_per_task",
            int,
            0,
            "shared packing: component instances run as threads of one Python worker "
            "(0: all instances of a topology in one worker)",
        ),
        Setting(
            "checkpoint",
            "interval",
            float,
            5.0,
            "seconds between aligned checkpoints of every instance's state (0: off)",
        ),
        Setting("checkpoint", "keep", int, 3, "complete checkpoints kept per topology plan"),
        Setting(
            "checkpoint",
            "timeout_s",
            float,
            60.0,
            "a checkpoint not complete within this is abandoned (counted as failed)",
        ),
        Setting(
            "checkpoint",
            "dir",
            str,
            "",
            "filesystem store (empty: <state_dir>/checkpoints); on a cluster a path every "
            "node shares",
        ),
        Setting(
            "checkpoint",
            "redis_url",
            str,
            "",
            "use Redis as the store instead (redis://host:port/db)",
        ),
    ],
)


def load_spark_settings(
    overrides: Optional[Mapping[str, Any]] = None,
    conf_dir: Union[str, Path, None] = None,
    env: Optional[Mapping[str, str]] = None,
) -> Settings:
    """conf/spark.yaml layered with CEP_SPARK_* / CEP_TOPOLOGY_* and overrides."""
    return SPARK.load(conf_dir=conf_dir, env=env, overrides=overrides)


def state_dir(settings: Settings) -> Path:
    """The state directory (created) for cluster and topology files."""
    path = Path(settings["spark.state_dir"] or PROJECT_ROOT / "var" / "spark")
    path.mkdir(parents=True, exist_ok=True)
    return path
