"""Every `@source` and `@sink` type, with the options it takes: the one table plan validation
reads (`cep validate`, plan add on the manager, the console editor), so an unknown type or
option, or a missing required one, is a positioned error listing what exists.

To add a connector: add an entry to SOURCES or SINKS here (its options, the required ones,
one line of description), then its implementation in receivers/sources.py or
publishers/sinks.py. An option ending in `.*` stands for every option with that prefix.
`required` holds groups: each group needs one of its options (`("publisher.url", "url")`).
Broker connectors take `connection='name'`: a named connection of the operator's settings
that holds the address and credentials, so no secret needs to sit in a plan text."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Connector:
    options: tuple
    required: tuple = ()  # of tuples: one option of each is needed
    doc: str = ""


# options every sink takes (publishers/delivery.py)
SINK_COMMON = ("delivery", "dedup")

SOURCES = {
    "http": Connector(
        ("port", "host", "receiver.url"),
        (),
        "the worker's endpoint; port/host or receiver.url add a listener",
    ),
    "zmq": Connector(("url",), (("url",),), "a ZeroMQ PULL socket bound at url"),
    "file": Connector(
        ("path", "tail", "batch.size"), (("path",),), "lines of a file; tail='true' follows it"
    ),
    # brokers
    "nats": Connector(
        (
            "connection",
            "url",
            "bootstrap.servers",
            "destination",
            "subject",
            "stream",
            "durable.name",
            "durable",
            "queue.group.name",
            "client.id",
            "cluster.id",
            "subscription.sequence",
            "ack.wait",
            "jetstream",
            "batch.size",
            "create.stream",
        ),
        (("destination", "subject"),),
        "NATS JetStream subject, durable consumer",
    ),
    "mqtt": Connector(
        (
            "connection",
            "url",
            "topic",
            "quality.of.service",
            "qos",
            "client.id",
            "clean.session",
            "keep.alive",
            "connection.timeout",
            "batch.size",
        ),
        (("topic",),),
        "an MQTT topic (QoS 0, 1, 2)",
    ),
    "jms": Connector(
        (
            "connection",
            "url",
            "provider.url",
            "destination",
            "destination.type",
            "connection.factory.type",
            "factory.initial",
            "connection.factory.jndi.name",
            "subscription.durable",
            "subscription",
            "client.id",
            "worker.count",
            "batch.size",
        ),
        (("destination",),),
        "a JMS queue or topic (ActiveMQ over STOMP)",
    ),
    "kafka": Connector(
        (
            "connection",
            "url",
            "bootstrap.servers",
            "topic.list",
            "topic",
            "group.id",
            "threading.option",
            "partition.no.list",
            "seq.enabled",
            "is.binary.message",
            "topic.offsets.map",
            "optional.configuration",
            "batch.size",
        ),
        (("topic.list", "topic"),),
        "Kafka topics",
    ),
    "websocket": Connector(
        (
            "connection",
            "url",
            "host",
            "port",
            "sub.protocol",
            "headers",
            "idle.timeout",
            "batch.size",
        ),
        (("url", "port", "connection"),),
        "a WebSocket client (url) or server (host/port)",
    ),
    "email": Connector(
        (
            "connection",
            "username",
            "host",
            "port",
            "store",
            "folder",
            "search.term",
            "polling.interval",
            "action.after.processed",
            "ssl.enable",
        ),
        (),
        "an IMAP or POP3 mailbox",
    ),
}

SINKS = {
    "log": Connector(("prefix", "priority", "level"), (), "the worker's log"),
    "file": Connector(("path", "append"), (("path",),), "lines appended to a file"),
    "http": Connector(
        ("publisher.url", "url", "timeout"), (("publisher.url", "url"),), "an HTTP POST per batch"
    ),
    "zmq": Connector(("url", "mode", "topic", "hwm"), (("url",),), "a ZeroMQ PUB socket"),
    "redis": Connector(
        ("connection", "url", "key", "maxlen", "timeout"), (), "XADD to a Redis stream"
    ),
    # brokers and stores
    "nats": Connector(
        (
            "connection",
            "url",
            "bootstrap.servers",
            "destination",
            "subject",
            "stream",
            "client.id",
            "cluster.id",
            "msg.id",
            "jetstream",
            "create.stream",
            "timeout",
            "max.pending",
            "batch.events",
        ),
        (("destination", "subject"),),
        "NATS JetStream subject, deduplicated by message id",
    ),
    "mqtt": Connector(
        (
            "connection",
            "url",
            "topic",
            "quality.of.service",
            "qos",
            "client.id",
            "message.retain",
            "retain",
            "clean.session",
            "keep.alive",
            "connection.timeout",
            "timeout",
            "batch.events",
        ),
        (("topic",),),
        "an MQTT topic",
    ),
    "jms": Connector(
        (
            "connection",
            "url",
            "provider.url",
            "destination",
            "destination.type",
            "connection.factory.type",
            "factory.initial",
            "connection.factory.jndi.name",
            "persistent",
            "timeout",
            "batch.events",
        ),
        (("destination",),),
        "a JMS queue or topic",
    ),
    "kafka": Connector(
        (
            "connection",
            "url",
            "bootstrap.servers",
            "topic",
            "partition.no",
            "key",
            "sequence.id",
            "is.binary.message",
            "optional.configuration",
            "acks",
            "timeout",
            "batch.events",
        ),
        (("topic",),),
        "a Kafka topic",
    ),
    "websocket": Connector(
        (
            "connection",
            "url",
            "host",
            "port",
            "sub.protocol",
            "headers",
            "idle.timeout",
            "timeout",
            "batch.events",
        ),
        (("url", "port", "connection"),),
        "a WebSocket client (url) or server (host/port)",
    ),
    "email": Connector(
        (
            "connection",
            "url",
            "address",
            "username",
            "host",
            "port",
            "ssl.enable",
            "auth",
            "to",
            "cc",
            "bcc",
            "subject",
            "content.type",
            "from",
            "starttls",
            "timeout",
        ),
        (("to",),),
        "an e-mail over SMTP",
    ),
    # checked further (mode, keys, lengths) by cep/model/sink_store.py
    "rdbms": Connector(
        (
            "datasource",
            "datasource.name",
            "table.name",
            "mode",
            "execution.mode",
            "on.key",
            "primary.keys",
            "update.keys",
            "field.length",
            "max.pending",
            "retry.interval",
        ),
        (("table.name",),),
        "rows inserted or upserted into a table of a configured datasource",
    ),
}


def kinds(direction: str) -> dict:
    """SOURCES for 'source', SINKS for 'sink'."""
    return SOURCES if direction == "source" else SINKS


def known_options(direction: str, kind: str) -> tuple:
    entry = kinds(direction)[kind]
    return entry.options + (SINK_COMMON if direction == "sink" else ())


def option_known(name: str, options) -> bool:
    return name in options or any(o.endswith(".*") and name.startswith(o[:-1]) for o in options)


def problems(direction: str, kind: str, given) -> list:
    """What is wrong with `@<direction>(type=kind, <given options>)`: [] when nothing.

    Messages name the type, the option and what exists."""
    table = kinds(direction)
    key = str(kind or "").strip().lower()
    if key not in table:
        return [
            f"@{direction}(type='{kind}') is not a known {direction} type; known: "
            f"{', '.join(sorted(table))}"
        ]
    options = known_options(direction, key)
    names = [str(n).lower() for n in given]
    out = [
        f"@{direction}(type='{key}') has no option '{n}'; its options: {', '.join(options)}"
        for n in names
        if not option_known(n, options)
    ]
    for group in table[key].required:
        if not any(g in names for g in group):
            out.append(f"@{direction}(type='{key}') needs {' or '.join(g + '=...' for g in group)}")
    return out
