"""The JVM options of the Spark JVMs the runtime starts (topology/jvm_options.py)."""

import types

from topology.jvm_options import jvm_options
from topology.launcher import spark_conf
from topology.spark_settings import load_spark_settings

C1 = "-XX:TieredStopAtLevel=1"


def settings(tmp_path, **extra):
    base = {"spark.state_dir": str(tmp_path), "spark.cds_dir": "off", **extra}
    return load_spark_settings(overrides=base, env={})


def remote_executors(conf=None):
    """A shipping of executors on other machines (no class-data sharing for them)."""
    return types.SimpleNamespace(mode="ship", spark_conf=lambda: dict(conf or {}))


def test_every_role_compiles_with_c1_only_by_default(tmp_path):
    s = settings(tmp_path)
    for role in ("master", "worker", "driver", "executor"):
        assert jvm_options(s, role) == [C1, "-XX:+UseSerialGC"], role
    conf = spark_conf(s, 1, 3)
    assert conf["spark.driver.extraJavaOptions"] == f"{C1} -XX:+UseSerialGC"
    assert conf["spark.executor.extraJavaOptions"] == f"{C1} -XX:+UseSerialGC"


def test_executors_on_other_machines_get_the_options_without_this_machines_archives(tmp_path):
    s = settings(tmp_path, **{"spark.cds_dir": str(tmp_path / "cds")})
    conf = spark_conf(s, 1, 3, shipping=remote_executors())
    assert conf["spark.executor.extraJavaOptions"] == f"{C1} -XX:+UseSerialGC"
    assert "SharedArchiveFile" not in conf["spark.executor.extraJavaOptions"]
    # the driver runs here: it records (then maps) this machine's archive after the options
    driver = conf["spark.driver.extraJavaOptions"].split()
    assert driver[:2] == [C1, "-XX:+UseSerialGC"] and len(driver) == 3, driver
    assert driver[2].startswith(("-XX:DumpLoadedClassList=", "-XX:SharedArchiveFile=")), driver


def test_empty_options_keep_the_jvm_defaults_and_the_operators_come_last(tmp_path):
    s = settings(
        tmp_path,
        **{
            "spark.jvm_options": "",
            "spark.conf": ["spark.driver.extraJavaOptions=-XX:TieredStopAtLevel=4"],
        },
    )
    assert jvm_options(s, "driver") == []
    conf = spark_conf(s, 1, 3)
    assert conf["spark.driver.extraJavaOptions"] == "-XX:TieredStopAtLevel=4"
    assert "spark.executor.extraJavaOptions" not in conf
    s = settings(tmp_path, **{"spark.conf": ["spark.driver.extraJavaOptions=-Xss4m"]})
    assert spark_conf(s, 1, 3)["spark.driver.extraJavaOptions"] == (f"{C1} -XX:+UseSerialGC -Xss4m")


def test_quoted_options_stay_one_argument(tmp_path):
    s = settings(tmp_path, **{"spark.jvm_options": "-Dcep.note='two words' -Xss2m"})
    assert jvm_options(s, "worker") == ["-Dcep.note=two words", "-Xss2m"]
    # Spark splits extraJavaOptions as a shell would
    assert spark_conf(s, 1, 3)["spark.driver.extraJavaOptions"] == "'-Dcep.note=two words' -Xss2m"
