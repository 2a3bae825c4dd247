"""The plan page's Checkpoints block and the REST plan status carry the driver's checkpoint
metrics (issue 11); the real app with a fake launcher, the topology status faked."""

import re

from tests.manager.console.test_console_views import PLANS, SAMPLE, add, page

CHECKPOINTS = {
    "enabled": True,
    "interval_s": 5.0,
    "store": "file",
    "plan_key": "abc",
    "in_progress": None,
    "restored_from": 6,
    "completed": 9,
    "failed": 1,
    "corrupt": 1,
    "abandoned": 0,
    "errors": [],
    "notice": "starts with fresh state",
    "last": {
        "id": 7,
        "time": 1795000000.0,
        "duration_ms": 42.5,
        "bytes": 12345,
        "alignment_ms": 3.25,
    },
}


def fake_status(manager, monkeypatch, checkpoints):
    real = manager.plans.topologies.status

    def status(tenant, plan):
        return {**real(tenant, plan), "state": "ACTIVE", "reason": "", "checkpoints": checkpoints}

    monkeypatch.setattr(manager.plans.topologies, "status", status)


def test_plan_page_and_rest_status_show_checkpoints(client, manager, monkeypatch):
    add(client, SAMPLE)
    fake_status(manager, monkeypatch, CHECKPOINTS)
    body = page(client, f"{PLANS}/StockAnalysis")
    block = re.search(r'<dl class="facts" id="plan-checkpoints">(.*?)</dl>', body, re.S).group(1)
    assert "#7 at 2026-" in block and "42.5 ms / 12345 bytes / 3.25 ms" in block
    assert "9 / 1 (1 corrupt)" in block and "#6" in block and "fresh state" in block
    status = client.get("/api/v1/tenants/-1234/plans/StockAnalysis/status").get_json()
    assert status["checkpoints"]["last"]["id"] == 7
    metrics = client.get("/api/v1/tenants/-1234/plans/StockAnalysis/metrics").get_json()
    assert metrics["checkpoints"] == CHECKPOINTS and metrics["components"]


def test_no_block_when_checkpoints_are_off(client, manager, monkeypatch):
    add(client, SAMPLE)
    fake_status(manager, monkeypatch, {"enabled": False})
    assert 'id="plan-checkpoints"' not in page(client, f"{PLANS}/StockAnalysis")
