"""Issue 10: the deployment-wide views (/api/v1/status, /api/v1/workers, the console's status
page) show a tenant's users only their own tenant: no other tenant's plan names, topologies,
endpoints, flows or Spark applications; the Prometheus /metrics (every tenant's labels) is for
super admins only."""

from manager.auth.roles import Principal
from manager.web.tenant_view import filter_status, filter_workers
from tests.manager.manager_plans import STAT_PLAN
from tests.security.auth_fixtures import app, people  # noqa: F401 (fixtures)

DOC = {
    "managers": [],
    "spark": {"applications": [{"name": "A[5]"}, {"name": "B[6]"}, {"name": "other"}]},
    "topologies": [{"tenant": 5, "plan": "A"}, {"tenant": 6, "plan": "B"}],
    "endpoints": [{"tenant": 5, "plan": "A"}, {"tenant": 6, "plan": "B"}],
    "flows": [{"tenant": 6, "plan": "B"}],
    "workers": [
        {
            "id": "w1",
            "plans": ["5/A", "6/B"],
            "eventsIn": 9,
            "eventsOut": 9,
            "duplicates": 2,
            "eventsInPerSec": 1.0,
            "eventsOutPerSec": 1.0,
            "threads": [
                {"name": "inflow 5/A/S", "last_error": None},
                {"name": "inflow 6/B/S", "last_error": "6/B failed"},
                {"name": "publisher -5/C", "last_error": None},
                {"name": "sync", "last_error": "deploy of 6/B failed"},
            ],
        }
    ],
}


def test_a_tenant_user_sees_only_its_tenant_in_the_status_document():
    seen = filter_status(DOC, Principal("v", 5, "viewer", "token"))
    assert [t["plan"] for t in seen["topologies"]] == ["A"]
    assert [e["plan"] for e in seen["endpoints"]] == ["A"]
    assert seen["flows"] == []
    assert [a["name"] for a in seen["spark"]["applications"]] == ["A[5]"]
    # its plans and threads only; no worker-wide totals (they count every tenant's events)
    assert seen["workers"] == [
        {"id": "w1", "plans": ["5/A"], "threads": [{"name": "inflow 5/A/S", "last_error": None}]}
    ]
    assert DOC["workers"][0]["plans"] == ["5/A", "6/B"]  # the shared document is not changed


def test_a_super_admin_sees_everything():
    admin = Principal("admin", -1234, "super-admin", "token")
    assert filter_status(DOC, admin) == DOC
    assert filter_workers(DOC["workers"], admin) == DOC["workers"]


def test_status_api_and_metrics_over_http(people):
    assert (
        people.admin.post(
            "/api/v1/tenants/5/plans", data=STAT_PLAN, content_type="text/plain"
        ).status_code
        == 201
    )
    assert (
        people.admin.post(
            "/api/v1/tenants/6/plans", data=STAT_PLAN, content_type="text/plain"
        ).status_code
        == 201
    )
    mine = people.viewer5.get("/api/v1/status").get_json()
    assert {t["tenant"] for t in mine["topologies"]} == {5}
    theirs = people.admin6.get("/api/v1/status").get_json()
    assert {t["tenant"] for t in theirs["topologies"]} == {6}
    everyone = people.admin.get("/api/v1/status").get_json()
    assert {5, 6} <= {t["tenant"] for t in everyone["topologies"]}
    assert people.viewer5.get("/metrics").status_code == 403
    assert people.admin.get("/metrics").status_code == 200
