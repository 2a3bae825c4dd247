"""Where a plan topology's listeners bind (manager/listeners.py): loopback on the embedded
loopback cluster; beyond it only with CURVE, else the deployment fails with the reason."""

import pytest

from manager.exceptions import InsecureTopologyError
from manager.listeners import check_listeners, component_host

EMBEDDED = {"spark.master": "embedded", "spark.host": "127.0.0.1"}
CLUSTER = {"spark.master": "spark://10.0.0.5:7077", "spark.host": "10.0.0.9"}


def test_the_embedded_loopback_cluster_binds_spouts_to_loopback():
    assert component_host("", EMBEDDED) == "127.0.0.1"
    assert component_host("10.1.1.1", EMBEDDED) == "10.1.1.1"  # an explicit host wins
    assert component_host("", CLUSTER) is None  # each executor's own address
    assert component_host("", {"spark.master": "embedded", "spark.host": "0.0.0.0"}) is None
    check_listeners("127.0.0.1", EMBEDDED, curve_on=False)  # allowed: nothing reaches it


@pytest.mark.parametrize(
    "host,spark,names",
    [
        (None, CLUSTER, ["receiver spouts on each executor address", "task links"]),
        ("10.1.1.1", EMBEDDED, ["receiver spouts on 10.1.1.1"]),
        ("127.0.0.1", CLUSTER, ["task links on the executors of spark://10.0.0.5:7077"]),
    ],
)
def test_beyond_loopback_without_curve_is_refused_with_the_reason(host, spark, names):
    with pytest.raises(InsecureTopologyError, match="security.curve is off") as err:
        check_listeners(host, spark, curve_on=False)
    for name in names:
        assert name in str(err.value)
    check_listeners(host, spark, curve_on=True)  # with CURVE every link is authenticated


def test_a_manager_without_curve_fails_a_cluster_deployment_with_the_reason(tmp_path):
    """The manager's own wiring: a plan added for a real cluster with CURVE off ends FAILED
    with the reason in its status (no Spark needed: the check runs before the submit)."""
    import time

    from manager.launcher import SparkLauncher
    from manager.server import Manager
    from manager.settings import load_manager_settings

    launcher = SparkLauncher(
        {
            "spark.master": "spark://10.255.255.1:7077",
            "spark.host": "10.255.255.2",
            "spark.state_dir": str(tmp_path / "spark"),
        }
    )
    manager = Manager(
        load_manager_settings(
            overrides={
                "manager.data_dir": str(tmp_path / "m"),
                "registry.port": 0,
                "registry.bind_host": "127.0.0.1",
                "manager.advertised_host": "127.0.0.1",
            },
            env={},
        ),
        launcher=launcher,
    ).start()
    try:
        manager.plans.add(
            -1234, "@Plan:name('Open') define stream S (a int); from S select a insert into O;"
        )
        deadline = time.monotonic() + 30
        while manager.plans.status(-1234, "Open")["state"] != "FAILED":
            assert time.monotonic() < deadline, manager.plans.status(-1234, "Open")
            time.sleep(0.1)
        reason = manager.plans.status(-1234, "Open")["reason"]
        assert "security.curve is off" in reason and "task links" in reason
    finally:
        manager.stop()
