"""The connector types of this package and their URL schemes; their option names are read from
cep/connectors.py, the table plan validation uses. `check_options` refuses an unknown option
at the worker with the list of those that exist, so a typo is an error, not a silently
ignored setting."""

from dataclasses import dataclass

# the option names themselves live in cep/connectors.py (with the Siddhi names the importer
# writes: quality.of.service, durable.name, topic.list, destination.type, message.retain)


@dataclass(frozen=True)
class Connector:
    """One connector type: its URL schemes and the options of its source and sink (None:
    the connector has no source, or no sink)."""

    name: str
    schemes: tuple
    source: tuple = None
    sink: tuple = None
    summary: str = ""


CONNECTORS = {
    c.name: c
    for c in (
        Connector(
            "nats",
            ("nats", "tls"),
            source=(
                "subject",
                "stream",
                "durable",
                "jetstream",
                "batch.size",
                "ack.wait",
                "create.stream",
            ),
            sink=("subject", "stream", "jetstream", "create.stream", "timeout", "max.pending"),
            summary="NATS; JetStream (durable consumers, message-id deduplication) by default",
        ),
        Connector(
            "mqtt",
            ("mqtt", "mqtts"),
            source=("topic", "qos", "client.id", "clean.session", "batch.size"),
            sink=("topic", "qos", "retain", "client.id", "timeout"),
            summary="MQTT 3.1.1 (QoS 0, 1, 2)",
        ),
        Connector(
            "jms",
            ("stomp", "stomp+ssl"),
            source=("destination", "subscription", "batch.size", "client.id"),
            sink=("destination", "persistent", "timeout"),
            summary="JMS queues (/queue/..) and topics (/topic/..) over STOMP (ActiveMQ)",
        ),
        Connector(
            "kafka",
            ("kafka",),
            source=("topic", "group.id", "batch.size", "partitions"),
            sink=("topic", "key", "acks", "timeout"),  # key: the index of the key attribute
            summary="Kafka (confluent-kafka / librdkafka)",
        ),
        Connector(
            "websocket",
            ("ws", "wss"),
            source=("batch.size",),
            sink=("timeout",),
            summary="WebSocket client: receives from or sends to a WebSocket server",
        ),
        Connector(
            "email",
            ("smtp", "smtps"),
            sink=("to", "from", "subject", "starttls", "timeout"),
            summary="e-mail over SMTP, one message per event",
        ),
    )
}


def source_types():
    return tuple(n for n, c in CONNECTORS.items() if c.source is not None)


def sink_types():
    return tuple(n for n, c in CONNECTORS.items() if c.sink is not None)


def option_names(direction, kind):
    """Every option a `@source` (direction 'source') or `@sink` of type `kind` takes (the
    table of cep/connectors.py, the one place plan validation reads); None for a type that is
    not a connector of this package."""
    from cep import connectors as table

    if (
        kind not in CONNECTORS
        or getattr(CONNECTORS[kind], direction) is None
        or kind not in table.kinds(direction)
    ):
        return None
    return ("type", "map") + table.known_options(direction, kind)


def check_options(direction, kind, options, where):
    """ValueError naming `where` and the known options when `options` has one the
    connector does not take."""
    known = option_names(direction, kind)
    if known is None:
        return
    unknown = sorted(k for k in options if k not in known)
    if unknown:
        raise ValueError(
            f"{where}: unknown option{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(map(repr, unknown))}; a {kind} {direction} takes "
            f"{', '.join(known)}"
        )
