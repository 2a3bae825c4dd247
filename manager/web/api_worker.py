"""REST API /api/v1/deployments: what CEP workers poll (PROTOCOL.md section 3), with an ETag."""

from flask import Blueprint, current_app, jsonify, request

from manager.store.base import parse_tenant

bp = Blueprint("api_worker", __name__, url_prefix="/api/v1")


@bp.get("/deployments")
def deployments():
    tenant = request.args.get("tenant")
    data = current_app.config["MANAGER"].plans.deployments(
        parse_tenant(tenant) if tenant is not None else None
    )
    etag = str(data["version"])
    if request.if_none_match and etag in request.if_none_match:
        resp = current_app.response_class(status=304)
    else:
        resp = jsonify(data)
    resp.set_etag(etag)
    return resp
