"""REST API `POST /api/v1/validate`: the editor's validate-as-you-type. 200 for any readable
body, with the positioned errors a rejected `plan add` would give (nothing is stored)."""

from flask import Blueprint, current_app, jsonify, request

from manager.store.base import SUPER_TENANT, parse_tenant
from manager.validation import validate_plan
from manager.web.api_plans import plan_text

bp = Blueprint("api_validate", __name__, url_prefix="/api/v1")


@bp.post("/validate")
def validate():
    tenant = parse_tenant(request.args.get("tenant", SUPER_TENANT))
    plans = current_app.config["MANAGER"].plans
    return jsonify(validate_plan(plans, tenant, plan_text()))
