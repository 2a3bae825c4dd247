"""Build a connector's source (a BrokerPump) or sink from its plan options, under the host
policy's named connections; the one place receivers/sources.py and publishers/sinks.py ask."""

import importlib

from cep.policy import PolicyViolation
from connectors.connections import connection_url
from connectors.position import PositionFile
from connectors.pump import BrokerPump
from connectors.registry import CONNECTORS, check_options, sink_types, source_types

# type -> (module, source class, sink class)
_IMPL = {
    "nats": ("connectors.nats_io", "NatsSource", "NatsSink"),
    "mqtt": ("connectors.mqtt_io", "MqttSource", "MqttSink"),
    "jms": ("connectors.stomp_io", "StompSource", "StompSink"),
    "kafka": ("connectors.kafka_io", "KafkaSource", "KafkaSink"),
    "websocket": ("connectors.websocket_io", "WebSocketSource", "WebSocketSink"),
    "email": ("connectors.email_sink", None, "EmailSink"),
}


class ConnectorConfigError(ValueError):
    """A connector's options or connection are refused; the message says where and why."""


def is_source(kind: str) -> bool:
    return kind in source_types()


def is_sink(kind: str) -> bool:
    return kind in sink_types()


def resolve_url(direction, kind, options, connections, where):
    """Check the options and the connection; the URL to use."""
    try:
        check_options(direction, kind, options, where)
        return connection_url(kind, CONNECTORS[kind].schemes, options, connections)
    except PolicyViolation as exc:
        raise ConnectorConfigError(f"{where}: {exc}") from None
    except ValueError as exc:
        raise ConnectorConfigError(str(exc)) from None


def _cls(kind, index):
    module, *names = _IMPL[kind]
    return getattr(importlib.import_module(module), names[index])


def build_source(
    kind, options, router, key, connections=None, state_dir=None, mapper=None
) -> BrokerPump:
    """A BrokerPump (start/stop/describe) of `@source(type=kind)` on stream `key`; `mapper`
    is its `@map` (a cep.mapping InputMapper, None: this system's JSON)."""
    where = f"@source(type='{kind}') on {key}"
    url = resolve_url("source", kind, options, connections, where)
    what = next(
        (options[k] for k in ("stream", "subject", "topic", "destination") if options.get(k)),
        "position",
    )
    position = PositionFile.for_source(state_dir, key, f"{kind}-{what}")
    try:
        source = _cls(kind, 0)(key, options, url, position)
    except ValueError as exc:
        raise ConnectorConfigError(str(exc)) from None
    return BrokerPump(source, router, key, mapper=mapper)


def build_sink(kind, stream, options, connections=None):
    """The sink of `@sink(type=kind)` on `stream`."""
    where = f"@sink(type='{kind}') on stream {stream}"
    url = resolve_url("sink", kind, options, connections, where)
    try:
        return _cls(kind, 1)(stream, options, url)
    except ValueError as exc:
        raise ConnectorConfigError(str(exc)) from None
