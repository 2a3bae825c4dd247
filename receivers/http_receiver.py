"""HTTP JSON receiver: `POST /events/<tenant>/<plan>/<stream>` with one event, an array, or
JSON lines (one event a line, e.g. `curl --data-binary @events.jsonl`). `?map=csv` (any
map type of cep.mapping in its default format, with its options as more parameters, e.g.
`?map=csv&delimiter=;`) reads this request's body in that format instead; a stream whose
`@source(type='http')` has a `@map` is read with it unless `?map=passThrough` is given.

The reply counts accepted and rejected events and gives the reasons:
`{"accepted": n, "rejected": m, "errors": [{"index": i, "reason": "..."}]}`, plus
`"refused": k, "refused_indices": [...]` for valid events a full buffer refused, and for a
stream with a write-ahead log `"wal": {"receiver_id", "appended", "committed"}` (the sender's
acknowledgement: PROTOCOL.md, "What a sender is told"). Status:
- 200 only when every event of the request was accepted (or nothing was sent);
- 207 when some were accepted and others rejected or refused: the reply names their indices,
  and only those need sending again (the refused ones; the rejected ones are invalid);
- 400 when every event was rejected, or the body is not JSON;
- 503 with Retry-After whenever a retry will help and nothing was accepted: the stream's
  buffer refused every valid event (`"reason": "backpressure"`), its write-ahead log is over
  wal.max_bytes or wal.max_age_s, a worker that reached no manager has undeployed the plan
  (`"reason": "no-manager"`, cep/worker/self_undeploy.py), or a worker that has just started
  has not synced its plans yet (`"reason": "starting"`);
- 404 for a stream the worker does not serve (naming only the stream asked for).

Limits (receivers.limits.ReceiverLimits, from the worker settings): a body over
max_body_bytes (16 MiB) or with more than max_events (100,000) events is 413, JSON nested
deeper than max_json_depth (32) is 400, a tenant id that is not an ASCII 32-bit integer is
400, and a tenant with an ingest key needs it (X-CEP-Ingest-Key or Authorization: Bearer),
else 401. Every error is JSON. `HttpServer` runs any WSGI app on a thread."""

import json
import logging

from flask import Blueprint, Flask, jsonify, request

from cep.mapping import MappingConfigError, MapSpec, input_mapper
from cep.mapping.spec import normalize_type
from cep.protocol.http_server import ProductionServer
from receivers.exceptions import BadPayloadError, StreamPausedError, UnknownStreamError
from receivers.limits import ReceiverLimits, check_depth, install_error_handlers, key_ok
from receivers.limits import parse_tenant
from receivers.validation import StreamKey
from receivers.wal.exceptions import LogFullError, WalError

log = logging.getLogger(__name__)
DEFAULT_LIMITS = ReceiverLimits()


def events_blueprint(router, limits=DEFAULT_LIMITS, ready=None, guard=None):
    """The `/events/...` routes over an IngestRouter; `ready()` False while the worker has not
    synced its plans yet (an unknown stream then answers 503, not 404); `guard` protects the
    stream list (it names every tenant's streams)."""
    bp = Blueprint("events", __name__)

    @bp.post("/events/<tenant>/<plan>/<stream>")
    def post_events(tenant, plan, stream):
        tenant_id = parse_tenant(tenant)
        if tenant_id is None:
            return _error(
                400,
                "tenant id must be an integer of ASCII digits within the 32-bit range",
                StreamKey("?", plan[:100], stream[:100]),
            )
        key = StreamKey(str(tenant_id), plan, stream)
        if not key_ok(limits, tenant_id, request.headers):
            resp = _error(
                401,
                f"tenant {tenant_id} needs its ingest key (X-CEP-Ingest-Key "
                f"header or Authorization: Bearer)",
                key,
            )
            resp[0].headers["WWW-Authenticate"] = 'Bearer realm="cep-ingest"'
            return resp
        try:
            mapper = _request_mapper(router, key)
        except MappingConfigError as exc:
            return _error(400, str(exc), key)
        if mapper is not None:  # ?map=..., else the stream's @source(type='http', @map(...))
            return mapped_post(router, key, mapper, request.get_data(cache=False))
        try:
            events, bad_lines = read_events(limits)
        except BadPayloadError as exc:
            return _error(getattr(exc, "status", 400), str(exc), key)
        try:
            result = router.ingest_json(key, events)
        except UnknownStreamError as exc:
            if ready is not None and not ready():
                return paused(
                    StreamPausedError(
                        "this worker has just started and is still syncing its plans; retry",
                        "starting",
                    ),
                    key,
                )
            return _error(404, str(exc), key)
        except WalError as exc:  # the write-ahead log is full or failing: nothing accepted
            return backpressure(exc, key)
        except StreamPausedError as exc:  # no manager reachable, plan torn down
            return paused(exc, key)
        if bad_lines:
            result = _with_bad_lines(result, events, bad_lines)
        resp = jsonify(result.to_dict())
        if result.refused and not result.accepted:
            resp.headers["Retry-After"] = "1"
            return resp, 503
        if not result.accepted and result.rejected:
            return resp, 400
        if result.rejected or result.refused:
            if result.refused:
                resp.headers["Retry-After"] = "1"
            return resp, 207
        return resp, 200

    @bp.get("/events")
    def list_streams():
        if guard is not None:
            refused = guard()
            if refused is not None:
                return refused
        return jsonify({"streams": [str(k) for k in router.keys()]})

    return bp


def _request_mapper(router, key):
    """The input mapper for this request: `?map=csv&delimiter=;` (a map type in its default
    format, with its options) for this request only, `?map=passThrough` for this system's
    JSON, else the @map of the stream's http source (None: this system's JSON)."""
    kind = request.args.get("map")
    if kind is None:
        return router.mapper(key)
    spec = MapSpec(
        normalize_type(kind), {k.lower(): v for k, v in request.args.items() if k != "map"}
    )
    if spec.type == "passthrough" and not spec.options:
        return None
    try:
        definition = router.definition(key)
    except UnknownStreamError:
        return None  # answered 404 below
    return input_mapper(spec, definition)


def mapped_post(router, key, mapper, body):
    """One request body through a source's map: 400 with the reasons when it holds no event
    the map can read; else the events it read are ingested (207 when some were not)."""
    decoded = mapper.decode([body])
    if not decoded.pairs:
        errors = [{"index": i, "reason": r} for i, r in decoded.errors] or [
            {"index": 0, "reason": "no event in the message"}
        ]
        return jsonify(
            {"accepted": 0, "rejected": len(errors), "errors": errors, "stream": str(key)}
        ), 400
    try:
        result = router.ingest_pairs(key, decoded.pairs)
    except WalError as exc:
        return backpressure(exc, key)
    except StreamPausedError as exc:
        return paused(exc, key)
    result.rejected += len(decoded.errors)
    result.errors = [(i, f"map: {r}") for i, r in decoded.errors] + result.errors
    return jsonify(result.to_dict()), (207 if result.rejected or result.refused else 200)


class TooManyEventsError(BadPayloadError):
    """More events in one request than receivers.max_events."""

    status = 413


def read_events(limits):
    """(events, bad lines) of the current request body within `limits`; BadPayloadError."""
    data = request.get_data(cache=False)
    check_depth(data, limits.max_json_depth)
    try:
        events, bad_lines = parse_body(data)
    except (ValueError, RecursionError) as exc:
        raise BadPayloadError(
            str(exc) if isinstance(exc, ValueError) else "JSON nests too deeply"
        ) from None
    if len(events) > limits.max_events:
        raise TooManyEventsError(
            f"{len(events)} events in one request; at most "
            f"{limits.max_events} (receivers.max_events)"
        )
    return events, bad_lines


def parse_body(data):
    """(events, bad lines) from a JSON event, a JSON array, or JSON lines (one event a line, as
    `cep run` reads them); ValueError when it is none of these."""
    try:
        body = json.loads(data or b"null")
    except (ValueError, UnicodeDecodeError) as exc:
        lines = [x for x in data.splitlines() if x.strip()]
        if len(lines) < 2:
            raise ValueError(f"body is not JSON: {exc}") from None
        return _json_lines(lines)
    if body is None:
        raise ValueError("empty body: send one event (a JSON object), an array, or JSON lines")
    return (body if isinstance(body, list) else [body]), []


def _json_lines(lines):
    events, bad = [], []
    for n, line in enumerate(lines):
        try:
            events.append(json.loads(line))
        except (ValueError, UnicodeDecodeError) as exc:
            bad.append((n, f"line {n + 1} is not JSON: {exc}"))
            events.append(None)  # keeps indexes = line numbers; rejected below
    return events, bad


def _with_bad_lines(result, events, bad_lines):
    """The validator rejected the None placeholders; give them the JSON error instead."""
    reasons = dict(bad_lines)
    result.errors = [(i, reasons.get(i, r)) for i, r in result.errors]
    return result


def _error(status, message, key):
    return jsonify({"accepted": 0, "rejected": 0, "error": message, "stream": str(key)}), status


def backpressure(exc, key):
    """503 with the reason: the events were not accepted; the sender should retry."""
    full = isinstance(exc, LogFullError)
    resp = jsonify(
        {
            "accepted": 0,
            "rejected": 0,
            "reason": "backpressure" if full else "log-unavailable",
            "retry": True,
            "error": str(exc)
            if full
            else "the stream's write-ahead log cannot write now; retry later",
            "stream": str(key),
        }
    )
    resp.headers["Retry-After"] = "1"
    return resp, 503


def paused(exc, key):
    """503 with the reason (e.g. `no-manager`): nothing accepted; the sender should retry."""
    resp = jsonify(
        {
            "accepted": 0,
            "rejected": 0,
            "reason": exc.reason,
            "retry": True,
            "error": str(exc),
            "stream": str(key),
        }
    )
    resp.headers["Retry-After"] = "1"
    return resp, 503


def create_app(router, blueprints=(), limits=DEFAULT_LIMITS, ready=None, guard=None):
    """A Flask app with the events routes and any extra blueprints (the worker's status API);
    every error it answers is JSON."""
    app = Flask("cep-worker")
    app.config["MAX_CONTENT_LENGTH"] = limits.max_body_bytes
    app.json.sort_keys = False
    app.register_blueprint(events_blueprint(router, limits, ready, guard))
    for bp in blueprints:
        app.register_blueprint(bp)
    install_error_handlers(app, limits)
    return app


class HttpServer:
    """Serve a WSGI app on host:port (0 picks a free port) from a daemon thread, with the
    production server (cep/protocol/http_server.py)."""

    def __init__(self, app, host="127.0.0.1", port=0, threads=16, timeout=30.0):
        self._server = ProductionServer(
            app, host, port, threads=threads, timeout=timeout, name="http"
        )
        self.host = host
        self.port = self._server.port

    @property
    def url(self):
        return f"http://{self.host}:{self.port}"

    def start(self):
        self._server.start()
        log.info("HTTP receiver listening on %s", self.url)
        return self

    def stop(self):
        self._server.stop()
