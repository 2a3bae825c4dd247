"""CEP 4.0 receivers and publishers as `@source`/`@sink` annotations with their `@map`, placed
on the streams of the execution plans that `@Import`/`@Export` them.

Adapters this system has become the same connector (`http`, `file-tail` -> `file`, `logger`
-> `log`, and the broker types jms, mqtt, kafka, websocket, email, rdbms by name), their
properties renamed to Siddhi 4's; credentials are left out (a named `connection` in the
operator's settings holds them) with a warning. Adapters it does not have (soap, sms,
cassandra, ui, wso2event, ...) are an error line naming the file and element; nothing is
dropped without a report line. Mappings: json, xml, text, map (keyvalue) with their custom
properties; wso2event becomes passThrough with a warning."""

import re
from dataclasses import dataclass, field

from cep.connectors import problems as connector_problems
from cep.mapping import OUTPUT, INPUT, MappingConfigError, MapSpec, check_map
from cep.importer.reader import Problem

# CEP 4.0 adapter -> (our type, {CEP property: our option}, properties left out on purpose)
SECRET = (
    "password",
    "username",
    "transport.jms.UserName",
    "transport.jms.Password",
    "http.username",
    "http.password",
    "transport.mail.Password",
    "email.password",
)
_JMS = {
    "java.naming.factory.initial": "factory.initial",
    "java.naming.provider.url": "provider.url",
    "transport.jms.DestinationType": "destination.type",
    "transport.jms.Destination": "destination",
    "transport.jms.ConnectionFactoryJNDIName": "connection.factory.jndi.name",
    "transport.jms.SubscriptionDurable": "subscription.durable",
    "transport.jms.DurableSubscriberName": "client.id",
}
RECEIVERS = {
    "http": ("http", {}, ("transports", "basicAuthEnabled")),
    "file-tail": ("file", {"filepath": "path"}, ("delayInMillis", "startFromEnd")),
    "jms": ("jms", _JMS, ()),
    "mqtt": (
        "mqtt",
        {
            "url": "url",
            "topic": "topic",
            "clientId": "client.id",
            "cleanSession": "clean.session",
            "keepAlive": "keep.alive",
        },
        (),
    ),
    "kafka": (
        "kafka",
        {
            "topic": "topic.list",
            "group.id": "group.id",
            "optional.configuration": "optional.configuration",
        },
        ("threads",),
    ),
    "websocket": ("websocket", {"websocket.server.url": "url"}, ()),
    "email": (
        "email",
        {
            "transport.mail.Address": "username",
            "mail.pop3.host": "host",
            "mail.imap.host": "host",
            "transport.PollInterval": "polling.interval",
        },
        (),
    ),
}
PUBLISHERS = {
    "logger": ("log", {}, ("uniqueId",)),
    "http": ("http", {"http.url": "publisher.url"}, ("http.client.method",)),
    "jms": ("jms", _JMS, ()),
    "mqtt": (
        "mqtt",
        {
            "url": "url",
            "topic": "topic",
            "qos": "quality.of.service",
            "clientId": "client.id",
            "cleanSession": "clean.session",
            "keepAlive": "keep.alive",
        },
        (),
    ),
    "kafka": (
        "kafka",
        {
            "meta.broker.list": "bootstrap.servers",
            "topic": "topic",
            "optional.configuration": "optional.configuration",
        },
        (),
    ),
    "websocket": ("websocket", {"websocket.server.url": "url"}, ()),
    "email": (
        "email",
        {"email.address": "to", "email.subject": "subject", "email.type": "content.type"},
        (),
    ),
    "rdbms": (
        "rdbms",
        {
            "datasource.name": "datasource",
            "table.name": "table.name",
            "execution.mode": "mode",
            "update.keys": "on.key",
        },
        (),
    ),
}
MAP_TYPES = {
    "json": "json",
    "xml": "xml",
    "text": "text",
    "map": "keyvalue",
    "wso2event": "passThrough",
}


@dataclass
class Connector:
    """One converted receiver or publisher: connector type, options, map."""

    direction: str  # source | sink
    type: str
    options: dict
    mapping: MapSpec
    artifact: object
    notes: list = field(default_factory=list)

    def text(self) -> str:
        parts = [f"type={_quote(self.type)}"]
        parts += [f"{k}={_quote(v)}" for k, v in self.options.items()]
        parts.append(map_text(self.mapping))
        return f"@{self.direction}({', '.join(parts)})"


def convert(art, definition, problems) -> Connector:
    """The @source/@sink for a receiver/publisher feeding/reading `definition` (the plan's
    StreamDefinition), or None (an error line is added to `problems`)."""
    direction = "source" if art.kind == "receiver" else "sink"
    table = RECEIVERS if art.kind == "receiver" else PUBLISHERS
    element = f"event{art.kind.capitalize()} '{art.name}'"
    entry = table.get(art.adapter)
    if entry is None:
        problems.append(
            Problem(
                art.file,
                f"{element} <{'from' if direction == 'source' else 'to'}"
                f" eventAdapterType='{art.adapter}'>",
                f"adapter '{art.adapter}' is not supported; supported: {', '.join(sorted(table))}",
            )
        )
        return None
    kind, renames, ignored = entry
    options = {}
    for prop, value in art.properties.items():
        if prop in renames:
            options[renames[prop]] = value
        elif prop in SECRET or prop.lower().endswith("password"):
            problems.append(
                Problem(
                    art.file,
                    f"{element} property '{prop}'",
                    "credentials are not kept in plans: give the "
                    "connector connection='name' (operator settings)",
                    "warning",
                )
            )
        elif prop not in ignored:
            problems.append(
                Problem(
                    art.file,
                    f"{element} property '{prop}'",
                    f"no {kind} option for it: left out",
                    "warning",
                )
            )
    if kind == "file":
        options["tail"] = "true"
    if kind == "log" and art.properties.get("uniqueId"):
        options["prefix"] = f"[{art.properties['uniqueId']}] "
    if kind == "rdbms" and options.get("mode"):
        options["mode"] = "upsert" if options["mode"].lower().startswith("update") else "insert"
    if kind == "http" and direction == "source":
        problems.append(
            Problem(
                art.file,
                element,
                "HTTP receivers are served at the worker endpoint /events/<tenant>/<plan>/<stream>",
                "note",
            )
        )
    if kind == "rdbms":
        mapping = _rdbms_mapping(art, element, problems)
    else:
        mapping = _mapping(art, direction, element, problems)
    if mapping is None:
        return None
    for msg in connector_problems(direction, kind, list(options)):
        problems.append(Problem(art.file, element, msg))
        return None
    try:
        check_map(mapping, definition, INPUT if direction == "source" else OUTPUT)
    except MappingConfigError as exc:
        problems.append(Problem(art.file, f"{element} <mapping>", str(exc)))
        return None
    return Connector(direction, kind, options, mapping, art)


def _rdbms_mapping(art, element, problems):
    """An RDBMS publisher writes one column per attribute, named as the attribute: its
    default mapping is nothing to convert; a custom one (other column names) is an error."""
    if art.mapping.custom:
        problems.append(
            Problem(
                art.file,
                f"{element} <mapping customMapping='enable'>",
                "custom column names are not supported: the rdbms sink "
                "writes one column per attribute, named as the attribute",
            )
        )
        return None
    return MapSpec("passthrough")


def _mapping(art, direction, element, problems):
    m = art.mapping
    kind = MAP_TYPES.get(m.type)
    if kind is None:
        problems.append(
            Problem(
                art.file,
                f"{element} <mapping type='{m.type}'>",
                f"mapping '{m.type}' is not supported; supported: {', '.join(MAP_TYPES)}",
            )
        )
        return None
    if m.type == "wso2event":
        problems.append(
            Problem(
                art.file,
                f"{element} <mapping type='wso2event'>",
                "read as passThrough (this system's event JSON)",
                "warning",
            )
        )
        return MapSpec("passthrough")
    if not m.custom:
        return MapSpec(kind)
    if m.registry is not None:
        problems.append(
            Problem(
                art.file,
                f"{element} <mapping><registry>",
                f"a registry resource ({m.registry}) cannot be read: put the template inline",
            )
        )
        return None
    if direction == "sink":
        return _output_mapping(m, kind, art, element, problems)
    return _input_mapping(m, kind, art, element, problems)


def _output_mapping(m, kind, art, element, problems):
    if kind == "keyvalue":
        payload = tuple((to.get("name"), frm.get("name")) for frm, to in m.properties)
        return MapSpec(kind, {}, (), payload)
    if m.inline is None:
        problems.append(
            Problem(art.file, f"{element} <mapping>", "custom mapping without an <inline> template")
        )
        return None
    return MapSpec(kind, {}, (), ((None, m.inline.strip()),))


def _input_mapping(m, kind, art, element, problems):
    options, attrs = {}, []
    if kind == "text":
        names = {}
        counters = {}
        last = None
        for frm, to in m.properties:
            regex = frm.get("regex", "")
            if regex != last or regex not in names:  # a new regex starts a new group count
                names.setdefault(regex, chr(ord("A") + len(names)))
                counters[regex] = 0 if regex != last else counters.get(regex, 0)
            last = regex
            counters[regex] += 1
            options[f"regex.{names[regex]}"] = regex
            attrs.append((to.get("name"), f"{names[regex]}[{counters[regex]}]"))
    else:
        key = {"json": "jsonPath", "xml": "xpath", "keyvalue": "name"}[kind]
        for frm, to in m.properties:
            attrs.append((to.get("name"), frm.get(key) or frm.get(key.lower()) or ""))
    for frm, to in m.properties:
        if to.get("default") is not None:
            problems.append(
                Problem(
                    art.file,
                    f"{element} property '{to.get('name')}'",
                    f"default value {to.get('default')!r} dropped: a missing "
                    f"value is null (fail.on.missing.attribute='false')",
                    "warning",
                )
            )
            options["fail.on.missing.attribute"] = "false"
    if kind == "xml":
        if m.parent_xpath:
            options["enclosing.element"] = m.parent_xpath
        if m.namespaces:
            options["namespaces"] = ",".join(f"{p}={u}" for p, u in m.namespaces.items())
    return MapSpec(kind, options, tuple(attrs))


def map_text(spec: MapSpec) -> str:
    parts = [f"type={_quote(_type_name(spec.type))}"]
    parts += [f"{k}={_quote(v)}" for k, v in spec.options.items()]
    if spec.attributes:
        parts.append(
            "@attributes("
            + ", ".join(f"{k}={_quote(v)}" if k else _quote(v) for k, v in spec.attributes)
            + ")"
        )
    if spec.payload:
        parts.append(
            "@payload("
            + ", ".join(f"{k}={_quote(v)}" if k else _quote(v) for k, v in spec.payload)
            + ")"
        )
    return f"@map({', '.join(parts)})"


def _type_name(kind):
    return "passThrough" if kind == "passthrough" else kind


def _quote(value) -> str:
    """A SiddhiQL string literal for `value` (triple quotes when it holds quotes, backslashes
    or line breaks: they take the text as it is)."""
    s = str(value)
    if not re.search(r"['\\\n\r]", s):
        return f"'{s}'"
    if '"""' not in s:
        return f'"""{s}"""'
    if "'''" not in s:
        return f"'''{s}'''"
    raise ValueError(f"a value holding both ''' and \"\"\" cannot be quoted: {s[:40]!r}")
