"""The pair's HTTP endpoints on the worker's own listener (so no new port: it binds where
receivers.http_host says, loopback by default). Every call needs the cluster secret."""

import logging

from flask import Blueprint, Response, jsonify, request

from cep.protocol import frames
from cep.security import cluster_secret
from cep.worker.ha.exceptions import PeerError, SyncError

log = logging.getLogger(__name__)


def ha_blueprint(node, secret):
    """POST /ha/heartbeat, POST /ha/input, GET /ha/snapshot/<tenant>/<plan>, GET /ha/status."""
    bp = Blueprint("ha", __name__)

    @bp.before_request
    def authenticate():
        if not cluster_secret.check(request.headers.get(cluster_secret.HEADER), secret):
            return jsonify(
                {"error": f"HA peer calls need the cluster secret ({cluster_secret.HEADER})"}
            ), 401
        return None

    @bp.post("/ha/heartbeat")
    def heartbeat():
        body = request.get_json(silent=True)
        if not isinstance(body, dict):
            return jsonify({"error": "a heartbeat is a JSON object"}), 400
        try:
            return jsonify(node.on_heartbeat(body))
        except (PeerError, TypeError, ValueError) as exc:
            return jsonify({"error": f"bad heartbeat: {exc}"}), 400

    @bp.post("/ha/input")
    def forwarded():
        try:
            items = frames.decode_ha_input(request.get_data(cache=False))
            return jsonify(node.on_forwarded(items))
        except (ValueError, TypeError) as exc:  # BadFrameError is a ValueError
            log.warning("HA: bad forwarded input: %s", exc)
            return jsonify({"error": "forwarded input is not [[plan, seq, stream, events]]"}), 400

    @bp.get("/ha/snapshot/<tenant>/<plan>")
    def snapshot(tenant, plan):
        try:
            blob = node.snapshot(f"{tenant}/{plan}", request.args.get("digest", ""))
        except SyncError as exc:
            return jsonify({"error": str(exc)}), 409
        return Response(blob, mimetype="application/octet-stream")

    @bp.get("/ha/status")
    def status():
        return jsonify(node.describe())

    return bp
