"""Issue 13: two managers in one process sharing a real Redis store and one (fake) launcher:
the leader deploys, the follower serves reads and sends writes to the leader (307), and takes
over by adopting the running topologies (no kill, no submit). Spark and real processes:
test_ha_failover_e2e.py."""

import pytest

from manager.server import Manager
from manager.settings import load_manager_settings
from manager.web import create_app
from tests.auth_helpers import authorize
from tests.manager.manager_fakes import FakeLauncher
from tests.manager.test_manager_adopt import RunDirLauncher  # handles with a run dir
from tests.manager.manager_helpers import poll
from tests.manager.manager_plans import STAT_PLAN


def manager(tmp_path, name, redis_url, launcher, ttl=4.0):
    # a lease of a few seconds: a loaded machine must not let it lapse between two renewals
    overrides = {
        "manager.data_dir": str(tmp_path / name),
        "registry.port": 0,
        "registry.bind_host": "127.0.0.1",
        "manager.advertised_host": "127.0.0.1",
        "store.redis_url": redis_url,
        "ha.lease_ttl": ttl,
        "metrics.sample_interval": 0,
    }
    m = Manager(load_manager_settings(overrides=overrides, env={}), launcher=launcher).start()
    m.set_url(f"http://{name}.invalid:1")
    return m


@pytest.fixture
def pair(tmp_path, redis_db):
    launcher = RunDirLauncher(tmp_path)
    first = manager(tmp_path, "one", redis_db, launcher)
    second = manager(tmp_path, "two", redis_db, launcher)
    yield launcher, first, second
    for m in (first, second):
        if m.started:
            m.stop()


def client(m):
    c = create_app({"MANAGER": m, "TESTING": True}).test_client()
    authorize(c, m)
    return c


def test_the_follower_reads_redirects_writes_and_takes_over_without_redeploying(pair):
    launcher, first, second = pair
    assert (first.role, second.role) == ("leader", "follower")
    lead, follow = client(first), client(second)
    assert (
        lead.post(
            "/api/v1/tenants/-1234/plans", data=STAT_PLAN, content_type="text/plain"
        ).status_code
        == 201
    )
    poll(
        lambda: second.plans.exists(-1234, "StatExecutionPlan"),
        timeout=60,
        what="the follower reads the new plan from the store",
    )
    poll(
        lambda: (
            follow.get("/api/v1/tenants/-1234/plans/StatExecutionPlan/status").get_json()["state"]
            == "ACTIVE"
        ),
        timeout=60,
        what="the follower sees the topology",
    )
    assert second.plans.deployments() == first.plans.deployments()  # same versions for workers
    # writes on the follower: 307 to the leader, nothing changed
    resp = follow.put(
        "/api/v1/tenants/-1234/plans/StatExecutionPlan", data=STAT_PLAN, content_type="text/plain"
    )
    assert resp.status_code == 307, resp.get_json()
    assert (
        resp.headers["Location"]
        == "http://one.invalid:1/api/v1/tenants/-1234/plans/StatExecutionPlan"
    )
    assert resp.get_json()["leader"] == "http://one.invalid:1"
    status = follow.get("/api/v1/status").get_json()
    me = [m for m in status["managers"] if m["self"]][0]
    assert me["role"] == "follower" and me["leaseHolder"] == first.group.id
    assert me["fencingToken"] == first.group.lease.token
    assert {m["role"] for m in status["managers"]} == {"leader", "follower"}
    page = follow.get("/console/status").get_data(as_text=True)  # the console's status page
    assert "Lease holder" in page and first.group.id in page and "follower" in page
    assert 'id="follower-notice"' in page and 'href="http://one.invalid:1/console/"' in page
    assert "follower-notice" not in lead.get("/console/status").get_data(as_text=True)
    submitted = len(launcher.submitted)
    first.stop()  # releases the lease: the follower takes over within a round
    poll(lambda: second.role == "leader", timeout=60, what="take-over")
    poll(
        lambda: second.topologies.status(-1234, "StatExecutionPlan").get("adopted"),
        timeout=60,
        what="adoption",
    )
    assert len(launcher.submitted) == submitted and launcher.killed == []
    assert second.plans.deployments()["version"] == first.plans.deployments()["version"]
    assert (
        follow.put(
            "/api/v1/tenants/-1234/plans/StatExecutionPlan",
            data=STAT_PLAN.replace("StatExecutionPlan", "StatExecutionPlan") + "\n",
            content_type="text/plain",
        ).status_code
        == 200
    )  # the new leader writes


def test_a_follower_store_write_is_refused_by_fencing(pair):
    _, first, second = pair
    first.plans.add(-1234, STAT_PLAN)
    with pytest.raises(Exception) as info:
        second.store.save(-1234, "Sneaky", "text")
    assert type(info.value).__name__ == "FencedWriteError"
    assert not first.store.exists(-1234, "Sneaky")


def test_a_single_manager_with_redis_leads_at_once(tmp_path, redis_db):
    launcher = FakeLauncher()
    m = manager(tmp_path, "solo", redis_db, launcher, ttl=10.0)
    try:
        assert m.role == "leader" and m.is_leader()
        m.plans.add(-1234, STAT_PLAN)
        poll(
            lambda: m.topologies.status(-1234, "StatExecutionPlan")["state"] == "ACTIVE", timeout=60
        )
    finally:
        m.stop()
    again = manager(tmp_path, "solo", redis_db, launcher, ttl=10.0)  # same id: leads at once
    try:
        assert again.role == "leader"
        assert again.info()["role"] == "leader"
    finally:
        again.stop()


def test_cep_manager_refuses_a_lease_shorter_than_a_second(tmp_path, redis_db):
    import subprocess
    import sys

    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "cep.cli.main",
            "manager",
            "--data-dir",
            str(tmp_path),
            "--redis-url",
            redis_db,
            "--lease-ttl",
            "0.5",
            "--http-port",
            "0",
            "--registry-port",
            "0",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "ha.lease_ttl must be at least 1 s" in result.stderr and "Traceback" not in result.stderr
