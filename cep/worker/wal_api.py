"""Commit and replay of the worker's write-ahead logs over its HTTP server.

    POST /wal/<tenant>/<plan>/<stream>/commit  {"receiver_id": "...", "offset": 41}
      -> {"ok": true, "deleted_segments": 2, "committed_offset": 41}
    POST /wal/<tenant>/<plan>/<stream>/replay  {"receiver_id": "...", "after": 41}
      -> {"ok": true, "first": 42, "end": 900, "events": 858, "missing": []}

A receiver spout calls these (receivers/offsets.py) at the worker URL that version 2 event
frames carry. When the worker has a cluster secret (distributed mode with
managers.cluster_secret_file or CEP_CLUSTER_SECRET) a request needs it in
X-CEP-Cluster-Secret, else 401: a commit deletes log segments."""

from flask import Blueprint, jsonify, request

from cep.security import cluster_secret
from cep.worker import wal_book
from receivers.wal.exceptions import WalError


def wal_blueprint(worker):
    bp = Blueprint("worker_wal", __name__)

    def _call(fn, tenant, plan, stream, field):
        secret = getattr(getattr(worker, "links", None), "secret", None)
        if secret and not cluster_secret.check(request.headers.get(cluster_secret.HEADER), secret):
            return jsonify(
                {
                    "ok": False,
                    "error": f"this request needs the cluster secret in {cluster_secret.HEADER}",
                }
            ), 401
        body = request.get_json(silent=True)
        offset = body.get(field) if isinstance(body, dict) else None
        if type(offset) is not int or offset < -1:
            why = f"body must be a JSON object with receiver_id and an integer {field} >= -1"
            return jsonify({"ok": False, "error": why}), 400
        try:
            return jsonify(
                {"ok": True, **fn(worker, tenant, plan, stream, body.get("receiver_id"), offset)}
            ), 200
        except wal_book.UnknownLogError as exc:
            return jsonify({"ok": False, "error": str(exc)}), 404
        except WalError as exc:
            return jsonify({"ok": False, "error": f"write-ahead log: {exc}"}), 503

    @bp.post("/wal/<tenant>/<plan>/<stream>/commit")
    def commit(tenant, plan, stream):
        return _call(_commit, tenant, plan, stream, "offset")

    @bp.post("/wal/<tenant>/<plan>/<stream>/replay")
    def replay(tenant, plan, stream):
        return _call(wal_book.replay, tenant, plan, stream, "after")

    return bp


def _commit(worker, tenant, plan, stream, receiver_id, offset):
    deleted = wal_book.commit(worker, tenant, plan, stream, receiver_id, offset)
    conn = wal_book.find_connection(worker, tenant, plan, stream, receiver_id)
    return {"deleted_segments": deleted, "committed_offset": conn.wal.committed}
