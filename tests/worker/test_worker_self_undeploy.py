"""Issue 13: a worker that reaches no manager for heartbeat_interval x max_retries undeploys
its distributed plans (503 with the reason, /status says so) and redeploys them when a
manager answers again; off when configured so. A real registry and a stand-in manager REST
endpoint whose answers can be cut (the process-level test with real managers is in
tests/manager/ha/test_ha_failover_e2e.py)."""

import time

from cep.protocol.frames import Identity
from tests.worker.test_worker_distributed import make_worker, plan_url, post


def undeploy_state(w):
    return w.status()["selfUndeploy"]


def test_no_manager_for_the_limit_undeploys_503_then_redeploys(
    fake_manager, registry_service, registry_client, tmp_path, helpers, monkeypatch
):
    wait_for = helpers["wait_for"]
    fake_manager.set_plans([helpers["stock_entry"]()])
    spout = helpers["FakeSpout"](registry_client)
    w = make_worker(
        fake_manager, registry_service, tmp_path, **{"managers.max_retries": 3}
    )  # 0.5 s x 3 = 1.5 s
    w.start()
    try:
        assert wait_for(lambda: "-1234/StockAnalysis" in w.status()["plans"])
        assert post(plan_url(w), [["IBM", 1.0, 1]])[0] == 200
        assert undeploy_state(w)["limitSec"] == 1.5 and not undeploy_state(w)["undeployed"]
        # a result the plan's publisher took before the outage (its lane's numbers 0 and 1)
        taken = Identity("StockAnalysis[-1234]:pub:0", 1, 0, runs=(("r1|f:0", 0, 2),))
        marks = next(iter(w.plans.values())).service.sink_set.dedup
        assert marks.fresh("Out", taken, ["a", "b"]) == (["a", "b"], 0)
        fake_manager.answer = 503  # no manager answers from now on
        cut_at = time.monotonic()
        assert wait_for(lambda: undeploy_state(w)["undeployed"], timeout=8)
        took = time.monotonic() - cut_at
        assert took >= 1.0, took  # not before the limit (how much later is a benchmark's)
        state = undeploy_state(w)
        assert (
            state["plans"] == ["-1234/StockAnalysis"] and "no manager answered" in state["reason"]
        )
        assert w.status()["plans"] == {}
        status, body = post(plan_url(w), [["IBM", 2.0, 1]])
        assert status == 503 and body["reason"] == "no-manager" and body["retry"] is True
        assert "undeployed" in body["error"] and body["accepted"] == 0
        fake_manager.answer = None  # a manager is back
        assert wait_for(lambda: "-1234/StockAnalysis" in w.status()["plans"], timeout=8)
        assert not undeploy_state(w)["undeployed"] and undeploy_state(w)["redeploys"] == 1
        # the redeployed plan still knows what it took: the topology's replay of those
        # results after its restore is a counted duplicate, not written twice
        again = next(iter(w.plans.values())).service.sink_set.dedup
        assert again.fresh("Out", taken, ["a", "b"]) == ([], 2)
        assert wait_for(lambda: post(plan_url(w), [["IBM", 3.0, 1]])[0] == 200)
        assert wait_for(lambda: spout.drain() >= 2)
        assert {e[1][1] for e in spout.events} >= {1.0, 3.0}
    finally:
        w.stop()


def test_self_undeploy_can_be_switched_off(fake_manager, registry_service, tmp_path, helpers):
    wait_for = helpers["wait_for"]
    fake_manager.set_plans([helpers["stock_entry"]()])
    w = make_worker(
        fake_manager,
        registry_service,
        tmp_path,
        **{"managers.max_retries": 1, "managers.self_undeploy": False},
    ).start()
    try:
        assert wait_for(lambda: "-1234/StockAnalysis" in w.status()["plans"])
        fake_manager.answer = 503
        time.sleep(1.5)  # three limits' worth
        assert "-1234/StockAnalysis" in w.status()["plans"]
        assert undeploy_state(w)["enabled"] is False and undeploy_state(w)["undeploys"] == 0
        assert post(plan_url(w), [["IBM", 1.0, 1]])[0] == 200  # buffered, as before
    finally:
        w.stop()
