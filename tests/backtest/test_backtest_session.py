"""How a backtest's executors get the project (issue 14): this checkout on this machine's
masters (local[N], embedded), the shipped code zip and packed environment elsewhere, as for
topologies; loopback binding only on the embedded cluster."""

import sys
import tarfile

from cep.backtest import session
from topology.spark_settings import load_spark_settings


def test_masters_on_this_machine_use_this_checkout():
    for master in (None, "local[2]", "embedded", "spark://127.0.0.1:7077"):
        conf = session._code_conf(master, None)
        assert conf["spark.executorEnv.PYTHONPATH"] == session.PROJECT_ROOT
        assert conf["spark.pyspark.python"] == sys.executable


def test_another_cluster_gets_the_shipped_code_and_no_manager_path(tmp_path):
    settings = load_spark_settings(overrides={"spark.state_dir": str(tmp_path)})
    conf = session._code_conf("spark://elsewhere:7077", settings)
    assert conf["spark.submit.pyFiles"].endswith(".zip")
    assert conf["spark.archives"].endswith("#env")
    with tarfile.open(conf["spark.archives"][: -len("#env")]) as tar:  # mapInArrow needs it
        assert any("/pyarrow/" in name for name in tar.getnames())
    assert conf["spark.pyspark.python"] == "./env/bin/python"
    assert session.PROJECT_ROOT not in conf.get("spark.executorEnv.PYTHONPATH", "")


def test_only_the_embedded_cluster_binds_loopback():
    assert session._cluster_conf(2, True)["spark.driver.host"] == "127.0.0.1"
    remote = session._cluster_conf(2, False)
    assert "spark.driver.host" not in remote and "spark.executorEnv.SPARK_LOCAL_IP" not in remote
    assert remote["spark.cores.max"] == "2"
