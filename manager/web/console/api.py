"""The console's JSON routes under /api/v1: `POST /try` (a plan over sample events,
in-process) and `POST /tenants/<t>/plans/<n>/simulate` (events through a live worker).
Errors are answered as JSON (the console's own here, the rest by the app's handlers)."""

from flask import Blueprint, current_app, jsonify, request

from manager.store.base import parse_tenant
from manager.web.console import data, simulate, tryit
from manager.web.console.exceptions import BadConsoleRequestError, ConsoleError

bp = Blueprint("console_api", __name__, url_prefix="/api/v1")


@bp.errorhandler(ConsoleError)
def console_error(exc):
    """The console's errors keep their message at 502/503 too (no worker, worker gone): it
    names no data path, only what to do, unlike the store/deploy errors the app hides."""
    return jsonify(exc.to_dict()), exc.status


def json_body():
    body = request.get_json(silent=True)
    if not isinstance(body, dict):
        raise BadConsoleRequestError("the body must be a JSON object")
    return body


@bp.post("/try")
def try_it():
    body = json_body()
    events = body.get("events", "")
    if not isinstance(events, str):
        raise BadConsoleRequestError('"events" must be JSON-lines text')
    policy = getattr(current_app.config["MANAGER"].plans, "policy", None)
    return jsonify(tryit.try_plan(body.get("plan"), events, policy))


@bp.post("/tenants/<tenant>/plans/<name>/simulate")
def simulate_events(tenant, name):
    tenant = parse_tenant(tenant)
    streams = {s["stream"] for s in data.imported_streams(tenant, name)}
    stream, events, rate, wanted = simulate.parse_request(json_body(), streams)
    worker = simulate.pick_worker(data.workers(), tenant, name, wanted)
    return jsonify(simulate.send(worker, tenant, name, events, rate))
