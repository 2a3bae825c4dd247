"""What of the whole deployment a principal may see: a super admin sees everything; a tenant's
users see their own tenant's topologies, endpoints, flows and Spark applications, and of the
workers only the plans of their tenant (no other tenant's plan names or counters leak)."""

import re

from flask import g

_APP_TENANT = re.compile(r"\[(-?\d+)\]$")  # topology names are <Plan>[<tenant>]


def _principal():
    return g.get("principal")


def _visible(principal, tenant):
    return principal is None or principal.sees(tenant)


def _plan_tenant(entry):
    """'<tenant>/<name>' as workers list their plans -> tenant, or None."""
    head = str(entry).split("/", 1)[0]
    try:
        return int(head)
    except ValueError:
        return None


_THREAD_PLAN = re.compile(r"\s(-?\d+)/[^\s/]+")  # "inflow -1234/Plan/Stream", "publisher 7/P"
_WORKER_TOTALS = ("eventsIn", "eventsOut", "eventsInPerSec", "eventsOutPerSec", "duplicates")


def _own_thread(thread, tenant):
    m = _THREAD_PLAN.search(" " + str(thread.get("name", "")))
    return m is not None and int(m.group(1)) == tenant


def filter_workers(workers, principal=None):
    """Workers as a tenant's user may see them: only its tenant's plans and supervised
    threads (with their errors), and none of the worker-wide event totals, which count
    every tenant's events."""
    principal = principal or _principal()
    if principal is None or principal.is_super:
        return workers
    out = []
    for w in workers:
        w = dict(
            w,
            plans=[p for p in w.get("plans", []) if _plan_tenant(p) == principal.tenant],
            threads=[t for t in w.get("threads", []) if _own_thread(t, principal.tenant)],
        )
        for key in _WORKER_TOTALS:
            w.pop(key, None)
        out.append(w)
    return out


def filter_manager_info(info, plans, principal=None):
    """GET /api/v1/manager for a tenant's user: the plan count of its own tenant only."""
    principal = principal or _principal()
    if principal is None or principal.is_super:
        return info
    return dict(info, plans=sum(1 for tenant, _ in plans.compiled if tenant == principal.tenant))


def _filter_spark(spark, principal):
    if not spark or not spark.get("applications"):
        return spark
    apps = []
    for app in spark["applications"]:
        m = _APP_TENANT.search(str(app.get("name", "")))
        if m and _visible(principal, int(m.group(1))):
            apps.append(app)
    return dict(spark, applications=apps)


def filter_status(doc, principal=None):
    """The /api/v1/status document cut to what `principal` (default: this request's) sees."""
    principal = principal or _principal()
    if principal is None or principal.is_super:
        return doc
    keep = lambda rows: [r for r in rows or [] if _visible(principal, r.get("tenant"))]  # noqa: E731
    return dict(
        doc,
        topologies=keep(doc.get("topologies")),
        endpoints=keep(doc.get("endpoints")),
        flows=keep(doc.get("flows")),
        workers=filter_workers(doc.get("workers") or [], principal),
        spark=_filter_spark(doc.get("spark"), principal),
    )
