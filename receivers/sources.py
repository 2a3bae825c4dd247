"""`@source(type='http'|'zmq'|'file', ...)` on an imported stream: build and run the source.

- `http`: the worker's own endpoint always serves the stream; with `port='N'` (or WSO2's
  `receiver.url='http://host:port/...'`) the source also listens on its own port and takes
  `POST /` (any path) for this stream only. With a `@map` and no port, the worker endpoint
  reads that stream's bodies with the map.
- `zmq`: bind a PULL socket at `url='tcp://host:port'` for this stream only (one-frame or
  two-frame messages, see receivers.zmq_receiver).
- `file`: read `path` as JSON lines; `tail='true'` keeps following it. With a host policy
  (cep.policy) the path must lie under the tenant's file roots, and is opened without
  following a final symlink.
Every source has start(), stop() and describe(). A `@map(...)` inside the `@source` (its
dict form, cep.mapping.MapSpec.to_dict, passed as `mapping`) decodes what the source receives:
the HTTP source's own listener maps each request body, the ZeroMQ source each payload frame,
the file source each line. Messages the map cannot read are counted per source (`describe()`
shows them with the last reasons) and logged; the rest go on. Without a map the sources take
this system's own JSON (and the ZeroMQ msgpack pairs) as before."""

from urllib.parse import urlsplit

from flask import Flask, jsonify, request

from cep.mapping import MappingConfigError, MapSpec, input_mapper
from cep.policy import PolicyViolation
from receivers.exceptions import BadPayloadError, SourceConfigError
from receivers.file_source import FileSource, SourcePump
from receivers.http_receiver import DEFAULT_LIMITS, HttpServer, backpressure, read_events
from receivers.http_receiver import mapped_post
from receivers.limits import install_error_handlers, key_ok, parse_tenant
from receivers.validation import StreamKey
from receivers.wal.exceptions import WalError
from receivers.zmq_receiver import ZmqReceiver
from connectors.registry import source_types as connector_source_types

SOURCE_TYPES = ("http", "zmq", "file") + connector_source_types()


def source_options(annotation):
    """A `@source(...)` annotation as a plain dict of options (keys lower-cased)."""
    return {k.lower(): v for k, v in annotation.elements if k is not None}


def build_source(options, router, key, policy=None, limits=None, mapping=None, state_dir=None):
    """A started-able source for stream `key` from its options dict (must have `type`);
    `policy` (cep.policy.HostPolicy) confines file sources to the tenant's roots and broker
    sources to its named connections, `limits` (receivers.limits.ReceiverLimits) caps an
    HTTP source's own listener; `mapping` is the source's `@map` (MapSpec or its dict form;
    None: this system's JSON); broker sources keep their position under `state_dir`."""
    kind = str(options.get("type", "")).lower()
    key = StreamKey(*key)
    mapper = _mapper(mapping, router, key, kind)
    if kind in connector_source_types():
        from connectors.build import ConnectorConfigError, build_source as build_broker

        try:
            return build_broker(
                kind,
                options,
                router,
                key,
                policy.brokers if policy is not None else None,
                state_dir,
                mapper,
            )
        except ConnectorConfigError as exc:
            raise SourceConfigError(str(exc)) from None
    if policy is not None:
        try:
            policy.listener(kind, options)
        except PolicyViolation as exc:
            raise SourceConfigError(f"@source(type='{kind}') on {key}: {exc}") from None
    if kind == "http":
        host, port = _http_address(options, key)
        return HttpSource(router, key, port, host, limits or DEFAULT_LIMITS, mapper)
    if kind == "zmq":
        url = options.get("url") or _required(options, "url", key)
        return ZmqSource(ZmqReceiver(router, url, default_key=key, mapper=mapper))
    if kind == "file":
        path = _required(options, "path", key)
        tail = str(options.get("tail", "false")).lower() == "true"
        roots = policy.file_roots_for(key.tenant) if policy is not None else None
        return FileSourceRunner(
            path, tail, router, key, _int(options, "batch.size", 1000, key), roots, mapper
        )
    raise SourceConfigError(
        f"@source on {key}: unknown type {kind!r}; known: {', '.join(SOURCE_TYPES)}"
    )


def _mapper(mapping, router, key, kind):
    """The input mapper of a source's @map, or None (no map, or passThrough)."""
    if mapping is None:
        return None
    spec = mapping if isinstance(mapping, MapSpec) else MapSpec.from_dict(mapping)
    if spec.type == "passthrough" and not spec.options:
        return None
    try:
        return input_mapper(spec, router.definition(key))
    except MappingConfigError as exc:
        raise SourceConfigError(f"@source(type='{kind}') on {key}: {exc}") from None


class HttpSource:
    """The worker endpoint always serves the stream (in this system's JSON); a `port` adds a
    listener of its own, which decodes request bodies with the source's map when it has one."""

    def __init__(self, router, key, port, host=None, limits=None, mapper=None):
        self.key, self.port, self.host = key, port, host or "127.0.0.1"
        self.mapper = mapper
        self._server = None
        self._router = router
        if mapper is not None and not port:  # the worker endpoint reads the stream's format
            router.set_mapper(key, mapper)
        if port:
            self._server = HttpServer(
                _single_stream_app(router, key, limits or DEFAULT_LIMITS, mapper), self.host, port
            )

    def start(self):
        if self._server:
            self._server.start()
        return self

    def stop(self):
        if self._server:
            self._server.stop()
        if self.mapper is not None and not self.port:
            try:
                if self._router.mapper(self.key) is self.mapper:
                    self._router.set_mapper(self.key, None)
            except Exception:  # noqa: BLE001 - the plan's routes may be gone already
                pass

    def describe(self):
        return {
            "type": "http",
            "stream": str(self.key),
            "url": self._server.url if self._server else "worker endpoint",
            **_mapping_state(self.mapper),
        }


class ZmqSource:
    def __init__(self, receiver):
        self.receiver = receiver

    def start(self):
        self.receiver.start()
        return self

    def stop(self):
        self.receiver.stop()

    def describe(self):
        return {
            "type": "zmq",
            "stream": str(self.receiver.default_key),
            "url": self.receiver.url,
            "bad_messages": self.receiver.bad_messages,
            **_mapping_state(self.receiver.mapper),
        }


class FileSourceRunner:
    def __init__(self, path, tail, router, key, batch_size, roots=None, mapper=None):
        self.path = path
        self.mapper = mapper
        self.pump = SourcePump(
            FileSource(path, batch_size, tail, roots=roots, raw=mapper is not None),
            router,
            key,
            mapper=mapper,
        )

    def start(self):
        self.pump.start()
        return self

    def stop(self):
        self.pump.stop()

    def describe(self):
        return {
            "type": "file",
            "stream": str(self.pump.key),
            "path": self.path,
            "sent": self.pump.sent,
            "bad_lines": len(self.pump.source.bad_lines),
            **_mapping_state(self.mapper),
        }


def _mapping_state(mapper):
    return {"map": mapper.describe()} if mapper is not None else {}


def _single_stream_app(router, key, limits, mapper=None):
    """POST (any path) for one stream, with the worker's limits, ingest key and JSON errors;
    with `mapper` the body is one message in the source's @map format."""
    app = Flask(f"source-{key}")
    app.config["MAX_CONTENT_LENGTH"] = limits.max_body_bytes

    @app.post("/", defaults={"path": ""})
    @app.post("/<path:path>")
    def post(path):
        if not key_ok(limits, parse_tenant(key.tenant), request.headers):
            return jsonify(
                {
                    "error": "Unauthorized",
                    "message": f"tenant {key.tenant} needs "
                    f"its ingest key (X-CEP-Ingest-Key or Bearer)",
                }
            ), 401
        if mapper is not None:
            return mapped_post(router, key, mapper, request.get_data(cache=False))
        try:
            events, _ = read_events(limits)
        except BadPayloadError as exc:
            return jsonify({"error": type(exc).__name__, "message": str(exc)}), getattr(
                exc, "status", 400
            )
        try:
            result = router.ingest_json(key, events)
        except WalError as exc:  # the stream's write-ahead log is full: 503, retry
            return backpressure(exc, key)
        return jsonify(result.to_dict()), (400 if result.rejected and not result.accepted else 200)

    install_error_handlers(app, limits)
    return app


def _http_address(options, key):
    """(host, port) from `receiver.url='http://host:port/...'` (WSO2's key) or host/port."""
    url = options.get("receiver.url")
    if url:
        parts = urlsplit(url)
        try:
            port = parts.port
        except ValueError:
            port = None
        if parts.scheme != "http" or not parts.hostname or not port:
            raise SourceConfigError(
                f"@source(type='http') on {key}: receiver.url={url!r} must be http://host:port/..."
            )
        return parts.hostname, port
    return options.get("host"), _int(options, "port", 0, key)


def _required(options, name, key):
    if not options.get(name):
        raise SourceConfigError(f"@source(type='{options.get('type')}') on {key} needs {name}=...")
    return options[name]


def _int(options, name, default, key):
    try:
        return int(options.get(name, default))
    except (TypeError, ValueError):
        raise SourceConfigError(
            f"@source on {key}: {name}={options.get(name)!r} is not an integer"
        ) from None
