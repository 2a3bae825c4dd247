"""The Spark session of a backtest: `local[N]` by default, the embedded cluster, or a master URL.

`embedded` starts (or reuses) the project's embedded standalone cluster (topology/cluster.py,
conf/spark.yaml) and asks it for N one-core executors; `spark://host:port` names another
cluster; no master means `local[N]` in this process's JVM (N = --executors, default the
number of CPUs). The application is named `backtest:<Plan>[<tenant>]`."""

import os
import sys

PROJECT_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def app_name(plan_name, tenant):
    return f"backtest:{plan_name}[{tenant}]"


def spark_session(name, master=None, executors=None, settings=None):
    """A new SparkSession for one backtest (stop it when done)."""
    from pyspark.sql import SparkSession

    executors = int(executors or os.cpu_count() or 1)
    code = _code_conf(master, settings)
    # pyspark takes the Python workers' interpreter from the environment, not the conf
    os.environ["PYSPARK_PYTHON"] = code["spark.pyspark.python"]
    builder = SparkSession.builder.appName(name)
    if not master or master.startswith("local"):
        builder = builder.master(master or f"local[{executors}]")
    else:
        builder = builder.master(_cluster_url(master, settings))
        for key, value in _cluster_conf(executors, master == "embedded").items():
            builder = builder.config(key, value)
    for key, value in {**code, **_common_conf()}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _cluster_url(master, settings):
    if master != "embedded":
        return master
    from topology.cluster import ensure_cluster
    from topology.spark_settings import load_spark_settings

    return ensure_cluster(settings or load_spark_settings()).master_url


def _cluster_conf(executors, loopback):
    """Executors of one core each; on the embedded cluster everything binds to loopback, on
    another cluster the driver and executors bind their own addresses."""
    conf = {
        "spark.executor.cores": "1",
        "spark.cores.max": str(executors),
        "spark.executor.instances": str(executors),
        "spark.executor.memory": "2g",
        "spark.scheduler.minRegisteredResourcesRatio": "1.0",
        "spark.scheduler.maxRegisteredResourcesWaitingTime": "30s",
        "spark.task.maxFailures": "2",
    }
    if loopback:
        conf.update(
            {
                "spark.driver.host": "127.0.0.1",
                "spark.driver.bindAddress": "127.0.0.1",
                "spark.executorEnv.SPARK_LOCAL_IP": "127.0.0.1",
            }
        )
    return conf


def _code_conf(master, settings):
    """How the executors get the project: this checkout and this Python for `local[N]`, the
    embedded cluster and any master on loopback (its workers are on this machine), else the
    shipped code zip and a packed environment with pyarrow (the Arrow data plane), as
    topology/shipping.py does for topologies (`topology.code`, `topology.executor_python`)."""
    if _on_this_machine(master):
        python = sys.executable
        return {
            "spark.pyspark.python": python,
            "spark.pyspark.driver.python": python,
            "spark.executorEnv.PYTHONPATH": PROJECT_ROOT,
        }
    from topology.packaging import EXECUTOR_DISTRIBUTIONS, env_archive
    from topology.shipping import ENV_ALIAS, resolve
    from topology.spark_settings import load_spark_settings, state_dir

    settings = (settings or load_spark_settings()).with_overrides({"spark.master": master})
    conf = resolve(settings).spark_conf()
    if "spark.archives" in conf:
        env = env_archive(state_dir(settings) / "ship", EXECUTOR_DISTRIBUTIONS + ("pyarrow",))
        conf["spark.archives"] = f"{env}#{ENV_ALIAS}"
    return conf


def _on_this_machine(master):
    if not master or master.startswith("local") or master == "embedded":
        return True
    host = master.split("://", 1)[-1].rsplit(":", 1)[0]
    return host in ("127.0.0.1", "localhost", "[::1]")


def _common_conf():
    return {
        "spark.ui.showConsoleProgress": "false",
        "spark.ui.enabled": "false",
        "spark.sql.execution.arrow.maxRecordsPerBatch": "20000",
        "spark.sql.shuffle.partitions": "8",
        "spark.python.worker.reuse": "true",
    }
