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
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # what the Python workers run
    builder = SparkSession.builder.appName(name)
    if not master or master.startswith("local"):
        builder = builder.master(master or f"local[{executors}]")
    else:
        builder = builder.master(_cluster_url(master, settings))
        for key, value in _cluster_conf(executors).items():
            builder = builder.config(key, value)
    for key, value in _common_conf().items():
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


def _cluster_conf(executors):
    return {"spark.executor.cores": "1", "spark.cores.max": str(executors),
            "spark.executor.instances": str(executors), "spark.executor.memory": "2g",
            "spark.scheduler.minRegisteredResourcesRatio": "1.0",
            "spark.scheduler.maxRegisteredResourcesWaitingTime": "30s",
            "spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1",
            "spark.executorEnv.SPARK_LOCAL_IP": "127.0.0.1", "spark.task.maxFailures": "2"}


def _common_conf():
    python = sys.executable
    return {"spark.pyspark.python": python, "spark.pyspark.driver.python": python,
            "spark.executorEnv.PYTHONPATH": PROJECT_ROOT,
            "spark.ui.showConsoleProgress": "false", "spark.ui.enabled": "false",
            "spark.sql.execution.arrow.maxRecordsPerBatch": "20000",
            "spark.sql.shuffle.partitions": "8", "spark.python.worker.reuse": "true"}
