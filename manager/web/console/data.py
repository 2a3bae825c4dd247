"""The data console pages render, read from the manager in-process. Fields the newer REST API
adds (statusText, lastChange, the deployment status) are used when present; otherwise
they are computed here from what the manager already has, so a page never depends on a field
that is not there yet."""

from flask import request

from manager.status import status_text
from manager.store.base import parse_tenant

# re-exported: the views format with data.age, data.duration, data.iso_time
from manager.web.console.formats import age, duration, iso_time  # noqa: F401
from manager.web.console.nav import manager


def plan_rows(tenant):
    """The plans of one tenant as the plans page shows them (sorted by name)."""
    plans = manager().plans
    rows = []
    for item in plans.list(tenant):
        status = item.get("status") or plans.status(item["tenant"], item["name"])
        rows.append(
            {
                **item,
                "status": status,
                "statusText": item.get("statusText") or status_text(status),
                "lastChange": item.get("lastChange") or "",
                "description": item.get("description") or "",
            }
        )
    return rows


def plan_detail(tenant, name):
    """One plan: summary, text, status, status text and XML query plan (404 if unknown)."""
    plans = manager().plans
    tenant = parse_tenant(tenant)
    shown = plans.show(tenant, name)
    status = plans.status(tenant, name)
    return {
        **shown,
        "status": status,
        "statusText": status_text(status),
        "xml": plans.query_plan(tenant, name),
    }


def imported_streams(tenant, name):
    """[{"stream", "attributes": [[name, type], ...]}] of a plan's imported streams."""
    plans = manager().plans
    tenant = parse_tenant(tenant)
    plans.show(tenant, name)  # PlanNotFoundError for an unknown plan
    for view in plans.deployments(tenant)["plans"]:
        if view["name"] == name:
            return [
                {"stream": s["stream"], "attributes": s["attributes"]} for s in view["imported"]
            ]
    return []


def deployment_status():
    """The whole deployment, as GET /api/v1/status gives it (the API's cached view when the
    manager has one; else the plans' topologies alone)."""
    try:
        from manager.deployment_view import deployment_status as api_status
    except ImportError:
        return _fallback_status()
    from manager.web.tenant_view import filter_status

    return filter_status(api_status(manager(), request.host_url.rstrip("/")))


def _fallback_status():
    m = manager()
    topologies = []
    for tenant, name in sorted(m.plans.compiled):
        st = m.topologies.status(tenant, name)
        topologies.append(
            {
                "tenant": tenant,
                "plan": name,
                "topology": st["topology"],
                "state": st["state"],
                "since": st["since"],
                "reason": st["reason"],
                "applicationId": None,
                "executors": None,
            }
        )
    return {
        "managers": [
            {
                "url": None,
                "host": m.host,
                "role": "leader",
                "registry": m.registry_url,
                "self": True,
            }
        ],
        "spark": None,
        "topologies": topologies,
        "workers": [],
        "endpoints": [],
        "flows": [],
    }


def workers():
    """The workers as GET /api/v1/workers lists them ([] until workers report to the manager)."""
    return deployment_status().get("workers") or []
