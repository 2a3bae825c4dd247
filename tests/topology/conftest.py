"""Shared fixtures: ONE embedded Spark standalone cluster for the whole test session."""

import os
import shutil

import pytest

from topology.cluster import ensure_cluster, stop_cluster
from topology.launcher import get_topology, list_topologies
from topology.spark_settings import load_spark_settings

SLOTS = 8


def _require_java():
    if shutil.which("java") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("java is required for the Spark tests (CI=true: not skipping)")
        pytest.skip("java is not installed: the embedded Spark cluster cannot start")


@pytest.fixture(scope="session")
def spark_settings(tmp_path_factory):
    """Settings of a private embedded cluster (own state dir, own free ports)."""
    _require_java()
    root = tmp_path_factory.mktemp("spark-state")
    settings = load_spark_settings(
        overrides={
            "spark.state_dir": str(root),
            "spark.slots": SLOTS,
            "spark.worker_memory": "4g",
            "topology.metrics_interval_s": 0.5,
            "topology.kill_wait_secs": 5.0,
        }
    )
    yield settings
    for status in list_topologies(settings):  # a failed test may leave one running
        get_topology(status["name"], settings).kill(wait_secs=0, timeout=20)
    stop_cluster(settings)


@pytest.fixture
def cluster(spark_settings):
    """The session cluster's ClusterInfo (started, or restarted if a test stopped it)."""
    return ensure_cluster(spark_settings)
