"""`GET /api/v1/openapi.json` (the OpenAPI 3 document, from manager/web/openapi.yaml) and
`GET /metrics` (Prometheus text exposition of the manager's own CollectorRegistry)."""

import functools
from pathlib import Path

import yaml
from flask import Blueprint, Response, current_app, jsonify
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

OPENAPI = Path(__file__).resolve().parent / "openapi.yaml"
bp = Blueprint("api_docs", __name__)


@functools.lru_cache(maxsize=1)
def openapi_document():
    with open(OPENAPI, encoding="utf-8") as fh:
        return yaml.safe_load(fh)


@bp.get("/api/v1/openapi.json")
def openapi():
    return jsonify(openapi_document())


@bp.get("/metrics")
def prometheus_metrics():
    registry = current_app.config["MANAGER"].metrics.registry
    return Response(generate_latest(registry), mimetype=CONTENT_TYPE_LATEST)
