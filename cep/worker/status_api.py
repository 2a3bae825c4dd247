"""The worker's own REST endpoints next to `/events/...`: health, status and metrics."""
from flask import Blueprint, jsonify


def status_blueprint(worker):
    """`GET /health`, `GET /status` (plans, connections, sync) and `GET /metrics` (counters)."""
    bp = Blueprint("worker_status", __name__)

    @bp.get("/health")
    def health():
        return jsonify({"ok": True, "worker": worker.identity.worker_id})

    @bp.get("/status")
    def status():
        return jsonify(worker.status())

    @bp.get("/metrics")
    def metrics():
        s = worker.status()
        return jsonify({"worker": s["worker"], "receivers": s["receivers"],
                        "plans": s["plans"]})

    return bp
