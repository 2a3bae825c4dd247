"""Per-tenant quotas (manager/quotas.py) on a real manager with a fake launcher: plans, task
slots (WAITING_FOR_QUOTA with the numbers, then deployed when slots free up), backtests at
once, plan size and queries; other tenants are unaffected."""

import time

import pytest

from manager.quotas import Quota, Quotas, QuotaExceededError
from manager.server import Manager
from manager.settings import load_manager_settings
from tests.manager.manager_fakes import FakeLauncher


def plan(name, parallel=1):
    return (
        f"@Plan:name('{name}')\ndefine stream S (a int);\n"
        f"@dist(parallel='{parallel}', execGroup='g')\nfrom S select a insert into O;\n"
    )


@pytest.fixture
def manager(tmp_path):
    m = Manager(
        load_manager_settings(
            overrides={
                "manager.data_dir": str(tmp_path / "m"),
                "registry.port": 0,
                "registry.bind_host": "127.0.0.1",
                "quotas.plans": 3,
                "quotas.slots": 8,
                "quotas.tenants": ["7: plans=1, slots=4, queries=2"],
            },
            env={},
        ),
        launcher=FakeLauncher(),
    ).start()
    m.topologies.quota_poll = 0.05
    yield m
    m.stop()


def state(m, tenant, name):
    return m.plans.status(tenant, name)


def wait_state(m, tenant, name, wanted, timeout=20):
    deadline = time.monotonic() + timeout
    while state(m, tenant, name)["state"] != wanted:
        assert time.monotonic() < deadline, state(m, tenant, name)
        time.sleep(0.02)
    return state(m, tenant, name)


def test_settings_parse_with_per_tenant_overrides():
    q = Quotas.from_settings(
        {
            "quotas.plans": 5,
            "quotas.slots": 0,
            "quotas.backtests": 2,
            "quotas.plan_bytes": 0,
            "quotas.queries": 0,
            "quotas.tenants": ["7: plans=1, backtests=0", " -3 : slots=9"],
        }
    )
    assert q.of(1) == Quota(5, 0, 2, 0, 0)
    assert q.of(7) == Quota(1, 0, 0, 0, 0) and q.of(-3) == Quota(5, 9, 2, 0, 0)
    with pytest.raises(ValueError, match="not one of"):
        Quotas.from_settings(
            {
                "quotas.plans": 0,
                "quotas.slots": 0,
                "quotas.backtests": 0,
                "quotas.plan_bytes": 0,
                "quotas.queries": 0,
                "quotas.tenants": ["7: cpus=3"],
            }
        )


def test_a_tenant_at_its_plan_quota_is_refused_and_others_are_not(manager):
    manager.plans.add(7, plan("A"))
    with pytest.raises(
        QuotaExceededError,
        match=r"tenant 7 has 1 execution plans; its quota "
        r"is 1 \(quotas.plans\)",
    ):
        manager.plans.add(7, plan("B"))
    for name in ("A", "B", "C"):  # tenant 5: the default quota of 3
        manager.plans.add(5, plan(name))
    manager.plans.remove(7, "A")
    manager.plans.add(7, plan("B"))  # room again


def test_a_topology_over_the_slot_quota_waits_with_the_numbers_then_deploys(manager):
    manager.plans.add(5, plan("Big", parallel=4))  # 4 + receiver + publisher = 6 slots
    wait_state(manager, 5, "Big", "ACTIVE")
    manager.plans.add(5, plan("More", parallel=2))  # 4 slots: 10 > 8
    st = wait_state(manager, 5, "More", "WAITING_FOR_QUOTA")
    assert (
        "tenant 5 uses 6 of its 8 task slots (quotas.slots); this topology needs 4" in st["reason"]
    )
    manager.plans.add(6, plan("Other", parallel=4))  # another tenant: unaffected
    wait_state(manager, 6, "Other", "ACTIVE")
    manager.plans.remove(5, "Big")
    wait_state(manager, 5, "More", "ACTIVE")  # resumes once the slots are free


def test_per_tenant_query_quota_is_checked_before_parsing(manager):
    from manager.exceptions import PlanRejectedError

    text = plan("Q") + "from S select a insert into P;\nfrom S select a insert into R;\n"
    with pytest.raises(PlanRejectedError, match=r"the plan has 3 queries; the limit is 2"):
        manager.plans.add(7, text)
    manager.plans.add(5, text)  # the default query limit


def test_backtests_of_a_tenant_at_once_are_limited_with_429(manager):
    q = manager.quotas
    q.check_backtests(5, 1)
    with pytest.raises(QuotaExceededError) as err:
        q.check_backtests(5, 2)
    assert err.value.status == 429 and err.value.retry_after == 5
    assert "tenant 5 runs 2 backtests; its quota is 2 at once" in str(err.value)


def test_quota_answers_over_rest_name_the_numbers(manager, tmp_path):
    from manager.web import create_app
    from tests.auth_helpers import authorize

    client = create_app({"MANAGER": manager}).test_client()
    authorize(client, manager)
    ok = client.post("/api/v1/tenants/7/plans", data=plan("A"), content_type="text/plain")
    assert ok.status_code == 201
    refused = client.post("/api/v1/tenants/7/plans", data=plan("B"), content_type="text/plain")
    assert refused.status_code == 403
    assert refused.get_json()["error"] == "QuotaExceededError"
    assert "its quota is 1 (quotas.plans)" in refused.get_json()["message"]
    manager.quotas.overrides[7] = Quota(plans=1, backtests=1)
    app = client.application
    app.extensions["backtests"] = {"x": {"id": "x", "tenant": "7", "plan": "A", "state": "running"}}
    busy = client.post(
        "/api/v1/tenants/7/plans/A/backtest",
        json={"inputs": {"S": "in.jsonl"}, "output": "out", "format": "jsonl"},
    )
    assert busy.status_code == 429 and busy.headers["Retry-After"] == "5"
    assert "tenant 7 runs 1 backtests" in busy.get_json()["message"]
