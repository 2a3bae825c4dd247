"""HTTP JSON receiver: `POST /events/<tenant>/<plan>/<stream>` with one event or an array.

The reply counts accepted and rejected events and gives the reasons:
`{"accepted": n, "rejected": m, "errors": [{"index": i, "reason": "..."}]}`; status 200 when
any event was accepted or nothing was sent, 400 when every event was rejected or the body is not
JSON, 404 for a stream the worker does not serve. `HttpServer` runs any WSGI app on a thread."""
import json
import logging
import threading

from flask import Blueprint, Flask, jsonify, request
from werkzeug.serving import make_server

from receivers.exceptions import UnknownStreamError
from receivers.validation import StreamKey

log = logging.getLogger(__name__)
MAX_BODY_BYTES = 64 * 1024 * 1024


def events_blueprint(router):
    """The `/events/...` routes over an IngestRouter."""
    bp = Blueprint("events", __name__)

    @bp.post("/events/<tenant>/<plan>/<stream>")
    def post_events(tenant, plan, stream):
        key = StreamKey(tenant, plan, stream)
        try:
            body = json.loads(request.get_data(cache=False) or b"null")
        except (ValueError, UnicodeDecodeError) as exc:
            return _error(400, f"body is not JSON: {exc}", key)
        if body is None:
            return _error(400, "empty body: send one event (a JSON object) or an array", key)
        events = body if isinstance(body, list) else [body]
        try:
            result = router.ingest_json(key, events)
        except UnknownStreamError as exc:
            return _error(404, str(exc), key)
        status = 400 if result.rejected and not result.accepted else 200
        return jsonify(result.to_dict()), status

    @bp.get("/events")
    def list_streams():
        return jsonify({"streams": [str(k) for k in router.keys()]})

    return bp


def _error(status, message, key):
    return jsonify({"accepted": 0, "rejected": 0, "error": message, "stream": str(key)}), status


def create_app(router, blueprints=()):
    """A Flask app with the events routes and any extra blueprints (the worker's status API)."""
    app = Flask("cep-worker")
    app.config["MAX_CONTENT_LENGTH"] = MAX_BODY_BYTES
    app.json.sort_keys = False
    app.register_blueprint(events_blueprint(router))
    for bp in blueprints:
        app.register_blueprint(bp)
    return app


class HttpServer:
    """Serve a WSGI app on host:port (0 picks a free port) from a daemon thread."""

    def __init__(self, app, host="127.0.0.1", port=0):
        self._server = make_server(host, port, app, threaded=True)
        self.host = host
        self.port = self._server.server_port
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        name=f"http-{self.port}", daemon=True)

    @property
    def url(self):
        return f"http://{self.host}:{self.port}"

    def start(self):
        self._thread.start()
        log.info("HTTP receiver listening on %s", self.url)
        return self

    def stop(self):
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
