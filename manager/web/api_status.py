"""REST API: the deployment as a whole and a plan's runtime views.

`GET /api/v1/status` (managers, Spark master, topologies, workers, endpoints, flows),
`GET /api/v1/workers`, `GET /api/v1/tenants/<t>/plans/<n>/topology` (the graph) and
`GET /api/v1/tenants/<t>/plans/<n>/metrics?window=10m|3h|1d|all` (Storm UI's names)."""

from flask import Blueprint, current_app, jsonify, request
from werkzeug.exceptions import BadRequest

from manager.deployment_view import deployment_status, workers
from manager.metrics_history import WINDOWS
from manager.store.base import parse_tenant
from manager.topology_view import plan_graph
from manager.web.tenant_view import filter_status, filter_workers

bp = Blueprint("api_status", __name__, url_prefix="/api/v1")


def manager():
    return current_app.config["MANAGER"]


@bp.get("/status")
def status():
    return jsonify(filter_status(deployment_status(manager(), request.host_url.rstrip("/"))))


@bp.get("/workers")
def list_workers():
    return jsonify({"workers": filter_workers(workers(manager().registry.table))})


@bp.get("/tenants/<tenant>/plans/<name>/topology")
def topology(tenant, name):
    tenant = parse_tenant(tenant)
    return jsonify(plan_graph(tenant, manager().plans.compiled_plan(tenant, name)))


@bp.get("/tenants/<tenant>/plans/<name>/metrics")
def metrics(tenant, name):
    tenant = parse_tenant(tenant)
    window = request.args.get("window", "10m")
    if window not in WINDOWS:
        raise BadRequest(f"window must be one of {', '.join(WINDOWS)}, got {window!r}")
    graph = plan_graph(tenant, manager().plans.compiled_plan(tenant, name))
    view = manager().history.window((tenant, name), window)
    doc = metrics_view(graph, view, window)
    # the topology's checkpoints (last id/time, duration, size, alignment, failures)
    doc["checkpoints"] = manager().plans.topologies.status(tenant, name).get("checkpoints")
    return jsonify(doc)


EMPTY = {
    "emitted": 0,
    "transferred": 0,
    "executed": 0,
    "executeLatencyMs": 0.0,
    "capacity": 0.0,
    "failed": 0,
    "errors": 0,
}


def metrics_view(graph, view, window):
    """The /metrics document: every component of the graph (zeros before the first sample)."""
    view = view or {"components": {}, "edges": {}, "recentErrors": [], "spanSec": 0.0}
    comps = []
    for c in graph["components"]:
        got = view["components"].get(c["id"], {})
        row = {
            "id": c["id"],
            "kind": c["kind"],
            "role": c["role"],
            "instances": got.get("instances") or c["parallelism"],
        }
        row.update({k: got.get(k, v) for k, v in EMPTY.items()})
        row["acked"] = got.get("acked", 0)
        comps.append(row)
    edges = [
        {
            "from": e["from"],
            "to": e["to"],
            "stream": e["stream"],
            "ratePerSec": view["edges"].get((e["from"], e["to"]), 0.0),
        }
        for e in graph["edges"]
        if not e["internal"]
    ]
    return {
        "window": window,
        "spanSec": view["spanSec"],
        "components": comps,
        "edges": edges,
        "recentErrors": view["recentErrors"],
    }
