"""Issue 10: a table-driven walk over every route of the manager's Flask URL map:
401 (or the login page) without credentials, 403 for a viewer on writes, 404 for another
tenant's resources with the same answer whether the plan exists or not (no leak)."""

import pytest

from tests.manager.manager_plans import STAT_PLAN
from tests.security.auth_fixtures import app, people  # noqa: F401 (fixtures)

# the documentation site is public (the project's own docs)
PUBLIC = {"static", "favicon", "root", "console_auth.login", "api_users.login", "docs_site.page"}
# writes a viewer may make: its own tokens/password, logging out, validating a plan
VIEWER_MAY = {
    "api_users.create_token",
    "api_users.revoke_token",
    "api_users.set_password",
    "console_auth.logout",
    "api_validate.validate",
}
SAMPLE_ARGS = {
    "tenant": "5",
    "name": "StatExecutionPlan",
    "user": "admin5",
    "token_id": "abc",
    "rest": "nowhere",
    "filename": "console/console.css",
    "job_id": "nojob",
}


def routes(app):
    """(endpoint, method, url) of every rule, its arguments filled from SAMPLE_ARGS."""
    out = []
    for rule in app.url_map.iter_rules():
        url = rule.rule
        for arg in rule.arguments:
            url = url.replace(f"<{arg}>", SAMPLE_ARGS[arg])
            url = url.replace(f"<path:{arg}>", SAMPLE_ARGS[arg])
        for method in sorted(rule.methods - {"HEAD", "OPTIONS"}):
            out.append((rule.endpoint, method, url))
    return out


@pytest.fixture
def deployed(people):
    resp = people.admin.post("/api/v1/tenants/5/plans", data=STAT_PLAN, content_type="text/plain")
    assert resp.status_code == 201, resp.get_json()
    return people


def send(client, method, url):
    return client.open(url, method=method, json={})


def test_the_walk_covers_every_kind_of_route(app):
    endpoints = {e for e, _, _ in routes(app)}
    assert {
        "api_plans.add_plan",
        "api_worker.deployments",
        "console.plans",
        "api_users.add_user",
        "console_api.try_it",
        "api_docs.prometheus_metrics",
    } <= endpoints
    assert len(routes(app)) >= 40


def test_every_route_needs_credentials(app, deployed):
    for endpoint, method, url in routes(app):
        if endpoint in PUBLIC:
            continue
        resp = send(deployed.anon, method, url)
        if method == "GET" and url.startswith("/console"):
            assert resp.status_code == 302, (endpoint, resp.status_code)
            assert resp.headers["Location"].startswith("/console/login?next=/console")
        else:
            assert resp.status_code == 401, (endpoint, method, resp.status_code)
            assert resp.get_json()["error"] == "NotAuthenticatedError"


def test_a_viewer_may_not_write(app, deployed):
    for endpoint, method, url in routes(app):
        if method == "GET" or endpoint in PUBLIC:
            continue
        resp = send(deployed.viewer5, method, url)
        if endpoint in VIEWER_MAY:
            assert resp.status_code < 500, (endpoint, resp.status_code)
        else:
            assert resp.status_code == 403, (endpoint, method, resp.status_code)
    assert deployed.viewer5.get("/api/v1/tenants/5/plans").status_code == 200
    assert deployed.admin.get("/api/v1/tenants/5/plans/StatExecutionPlan").status_code == 200


def test_another_tenant_is_not_found_whether_or_not_the_plan_exists(app, deployed):
    tenant_routes = [(e, m, u) for e, m, u in routes(app) if "/tenants/5/" in u]
    assert len(tenant_routes) >= 14
    for endpoint, method, url in tenant_routes:
        there = send(deployed.admin6, method, url)
        missing = send(deployed.admin6, method, url.replace("StatExecutionPlan", "NoSuchPlan"))
        assert there.status_code == missing.status_code == 404, (endpoint, method)
        assert there.data == missing.data  # the same answer: existence does not leak
    assert deployed.admin6.get("/api/v1/validate?tenant=5").status_code == 405
    assert deployed.admin6.post("/api/v1/validate?tenant=5", data="x").status_code == 404
    assert deployed.admin6.get("/api/v1/deployments").status_code == 403
    # the owner still sees it; a super admin acts in any tenant
    assert deployed.admin5.get("/api/v1/tenants/5/plans/StatExecutionPlan").status_code == 200
    assert deployed.admin.get("/api/v1/tenants/6/plans").status_code == 200


def test_tenant_admin_changes_only_its_own_tenant(deployed):
    text = STAT_PLAN.replace("StatExecutionPlan", "Mine")
    assert (
        deployed.admin5.post(
            "/api/v1/tenants/5/plans", data=text, content_type="text/plain"
        ).status_code
        == 201
    )
    assert (
        deployed.admin5.post(
            "/api/v1/tenants/6/plans", data=text, content_type="text/plain"
        ).status_code
        == 404
    )
    assert deployed.admin5.delete("/api/v1/tenants/5/plans/Mine").status_code == 200
    assert (
        deployed.admin5.post(
            "/api/v1/users", json={"name": "x", "password": "p" * 10, "tenant": 5}
        ).status_code
        == 403
    )
    listing = deployed.admin5.get("/api/v1/tenants/5/plans").get_json()
    assert [p["name"] for p in listing["plans"]] == ["StatExecutionPlan"]
