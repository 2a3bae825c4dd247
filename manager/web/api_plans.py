"""REST API /api/v1: execution plans per tenant (add, edit, remove, list, show, status,
query-plan)."""

from flask import Blueprint, Response, current_app, jsonify, request

from manager.exceptions import PlanRejectedError
from manager.web.tenant_view import filter_manager_info

bp = Blueprint("api_plans", __name__, url_prefix="/api/v1")


def plans():
    return current_app.config["MANAGER"].plans


def plan_text():
    """The SiddhiQL text of a request: a text body, or JSON {"text": ...}."""
    if request.is_json:
        data = request.get_json(silent=True)
        if not isinstance(data, dict) or not isinstance(data.get("text"), str):
            raise PlanRejectedError('a JSON body must be {"text": "<SiddhiQL>"}')
        return data["text"]
    return request.get_data(as_text=True)


@bp.get("/manager")
def manager_info():
    m = current_app.config["MANAGER"]
    return jsonify(filter_manager_info(m.info(), m.plans))


@bp.get("/tenants/<tenant>/plans")
def list_plans(tenant):
    items = plans().list(tenant)
    return jsonify({"tenant": int(tenant), "plans": items})


@bp.post("/tenants/<tenant>/plans")
def add_plan(tenant):
    return jsonify(plans().add(tenant, plan_text())), 201


@bp.get("/tenants/<tenant>/plans/<name>")
def show_plan(tenant, name):
    return jsonify(plans().show(tenant, name))


@bp.put("/tenants/<tenant>/plans/<name>")
def edit_plan(tenant, name):
    return jsonify(plans().edit(tenant, name, plan_text()))


@bp.delete("/tenants/<tenant>/plans/<name>")
def remove_plan(tenant, name):
    return jsonify(plans().remove(tenant, name))


@bp.get("/tenants/<tenant>/plans/<name>/status")
def plan_status(tenant, name):
    return jsonify(plans().status(tenant, name))


@bp.get("/tenants/<tenant>/plans/<name>/query-plan")
def query_plan(tenant, name):
    return Response(plans().query_plan(tenant, name), mimetype="application/xml")
