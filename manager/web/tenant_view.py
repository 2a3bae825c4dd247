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


def filter_workers(workers, principal=None):
    principal = principal or _principal()
    if principal is None or principal.is_super:
        return workers
    out = []
    for w in workers:
        w = dict(w, plans=[p for p in w.get("plans", []) if _plan_tenant(p) == principal.tenant])
        out.append(w)
    return out


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
    return dict(doc, topologies=keep(doc.get("topologies")), endpoints=keep(doc.get("endpoints")),
                flows=keep(doc.get("flows")), workers=filter_workers(doc.get("workers") or [], principal),
                spark=_filter_spark(doc.get("spark"), principal))
