"""The worker's own REST endpoints next to `/events/...`: health, status and metrics."""

from flask import Blueprint, Response, jsonify, request
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from cep.worker.prometheus import worker_registry


def status_blueprint(worker, guard=None):
    """`GET /health`, `GET /status` (plans, connections, sync), `GET /metrics` (Prometheus text
    exposition) and `GET /metrics.json` (the same counters as JSON); all but /health behind
    `guard` (cep/worker/access.py) when given."""
    bp = Blueprint("worker_status", __name__)
    registry = worker_registry(worker)

    @bp.before_request
    def check_access():
        if guard is not None and request.endpoint != "worker_status.health":
            return guard.refused()

    @bp.get("/health")
    def health():
        return jsonify({"ok": True, "worker": worker.identity.worker_id})

    @bp.get("/status")
    def status():
        return jsonify(worker.status())

    @bp.get("/metrics")
    def metrics():
        return Response(generate_latest(registry), mimetype=CONTENT_TYPE_LATEST)

    @bp.get("/metrics.json")
    def metrics_json():
        s = worker.status()
        return jsonify({"worker": s["worker"], "receivers": s["receivers"], "plans": s["plans"]})

    return bp
