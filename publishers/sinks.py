"""Build sinks from `@sink(type=..., ...)` annotations, the manager's sink specs or worker config.

A sink spec is `{"type": "file", "options": {"path": "..."}}` (the shape the manager's
/api/v1/deployments gives for each exported stream); no spec means the default log sink.
`build_sink(spec, stream, policy, tenant)` applies the host policy (cep.policy) of the plan's
tenant: file sinks stay under its file roots, HTTP sinks go to allow-listed hosts only, Redis
sinks use configured connections only, ZeroMQ sinks connect to allow-listed hosts and bind
allowed addresses only. Without a policy (library use, tests) nothing is
confined; the worker always passes its policy.

A spec may carry `"map"` (a `@map(...)` in cep.mapping.MapSpec's dict form) and `"definition"`
(the stream's StreamDefinition, which a map needs to name attributes): the sink then writes
mapped messages (publishers.base.Sink.mapper)."""

from cep.mapping import MappingConfigError, MapSpec, output_mapper
from cep.model import find_annotation
from cep.policy import PolicyViolation
from publishers.delivery import AT_LEAST_ONCE, EXACTLY_ONCE, sink_delivery
from publishers.exceptions import SinkConfigError
from publishers.file_sink import FileSink
from publishers.http_sink import HttpSink
from publishers.log_sink import LogSink
from connectors.registry import sink_types as connector_sink_types

DEFAULT_SPEC = {"type": "log", "options": {}}


def _log(stream, options, policy, tenant):
    return LogSink(stream, options)


def _file(stream, options, policy, tenant, staged=False):
    roots = policy.file_roots_for(tenant) if policy is not None else None
    if staged:
        from publishers.staged_file import StagedFileSink

        return StagedFileSink(stream, options, roots=roots)
    return FileSink(stream, options, roots=roots)


def _http(stream, options, policy, tenant):
    return HttpSink(stream, options, allow=policy.http if policy is not None else None)


def _zmq(stream, options, policy, tenant):
    from publishers.zmq_sink import ZmqPubSink

    if policy is not None:
        try:
            policy.zmq_sink(options)
        except PolicyViolation as exc:
            raise SinkConfigError(f"@sink(type='zmq') on stream {stream}: {exc}") from None
    return ZmqPubSink(stream, options)


def _redis(stream, options, policy, tenant, staged=False):
    from publishers.redis_sink import RedisSink
    from publishers.staged_redis import StagedRedisSink

    kind = StagedRedisSink if staged else RedisSink
    return kind(stream, options, connections=policy.redis if policy is not None else None)


def _rdbms(stream, options, policy, tenant, definition=None):
    from publishers.rdbms_sink import RdbmsSink

    return RdbmsSink(stream, options, definition, tenant=tenant if policy is not None else None)


def _connector(kind):
    """The factory of a broker connector's sink (connectors/)."""

    def factory(stream, options, policy, tenant, staged=False):
        from connectors.build import ConnectorConfigError, build_sink as build_broker

        try:
            return build_broker(
                kind, stream, options, policy.brokers if policy is not None else None
            )
        except ConnectorConfigError as exc:
            raise SinkConfigError(str(exc)) from None

    return factory


SINK_TYPES = {
    "log": _log,
    "file": _file,
    "http": _http,
    "zmq": _zmq,
    "redis": _redis,
    **{kind: _connector(kind) for kind in connector_sink_types()},
    "rdbms": _rdbms,
}


def build_sink(spec, stream, policy=None, tenant=None, delivery=AT_LEAST_ONCE, dedup=True):
    """A sink for `stream` from a spec `{"type": ..., "options": {...}}`, confined by `policy`
    (a cep.policy.HostPolicy) for `tenant` when given. The sink's `delivery` and `dedup`
    come from its `delivery=`/`dedup=` options, else from the defaults given here
    (publishers/delivery.py); exactly-once file and Redis sinks stage their output."""
    if not isinstance(spec, dict):
        raise SinkConfigError(
            f"sink for stream {stream}: expected a mapping with 'type', got {spec!r}"
        )
    kind = str(spec.get("type", "")).lower()
    options = spec.get("options")
    if options is None:  # a flat mapping from worker config: {type: file, path: ...}
        options = {k: v for k, v in spec.items() if k not in ("type", "map", "definition")}
    factory = SINK_TYPES.get(kind)
    if factory is None:
        raise SinkConfigError(
            f"sink for stream {stream}: unknown type {kind!r}; known: {', '.join(SINK_TYPES)}"
        )
    options = {str(k).lower(): v for k, v in options.items()}
    mode, dedup = sink_delivery(
        kind, options, delivery, dedup, where=f"@sink(type='{kind}') on stream {stream}"
    )
    mapper = _output_mapper(spec, kind, stream)
    if mapper is not None and mode == EXACTLY_ONCE and kind == "redis":
        raise SinkConfigError(
            f"@sink(type='redis') on stream {stream}: an exactly-once Redis "
            f"sink writes this system's entries only; drop the @map or use "
            f"delivery='at-least-once'"
        )
    if kind == "rdbms":  # rows, one column per attribute: the stream's definition, no map
        if mapper is not None:
            raise SinkConfigError(
                f"@sink(type='rdbms') on stream {stream}: an rdbms sink "
                f"writes one column per attribute; it takes no @map"
            )
        sink = factory(stream, options, policy, tenant, definition=spec.get("definition"))
    elif mode == EXACTLY_ONCE:
        sink = factory(stream, options, policy, tenant, staged=True)
    else:
        sink = factory(stream, options, policy, tenant)
    sink.delivery, sink.dedup = mode, dedup
    sink.mapper = mapper
    return sink


def _output_mapper(spec, kind, stream):
    mapping = spec.get("map")
    if not mapping:
        return None
    mspec = mapping if isinstance(mapping, MapSpec) else MapSpec.from_dict(mapping)
    if mspec.type == "passthrough" and not mspec.options:
        return None
    definition = spec.get("definition")
    if definition is None:
        raise SinkConfigError(
            f"@sink(type='{kind}') on stream {stream}: a @map needs the stream's definition"
        )
    try:
        return output_mapper(mspec, definition)
    except MappingConfigError as exc:
        raise SinkConfigError(f"@sink(type='{kind}') on stream {stream}: {exc}") from None


def map_of(annotation):
    """The `@map(...)` inside a `@source`/`@sink` annotation in MapSpec's dict form, or None."""
    mapping = find_annotation(annotation.annotations, "map")
    return MapSpec.from_annotation(mapping).to_dict() if mapping is not None else None


def sink_specs_from_annotations(annotations):
    """The specs of every `@sink(...)` among a stream definition's annotations."""
    specs = []
    for a in annotations:
        if a.matches("sink"):
            options = {k.lower(): v for k, v in a.elements if k is not None}
            kind = options.pop("type", None)
            if not kind:
                raise SinkConfigError(f"@sink at line {a.span.line} needs type='...'")
            spec = {"type": kind, "options": options}
            mapping = map_of(a)
            if mapping is not None:
                spec["map"] = mapping
            specs.append(spec)
    return specs
