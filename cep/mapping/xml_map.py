"""`@map(type='xml')`: XML messages in and out, with lxml.

Input, default format: `<events><event><metaData>..</metaData><correlationData>..
</correlationData><payloadData><symbol>WSO2</symbol>..</payloadData></event>..</events>`
(CEP 4.0), or Siddhi 4's `<events><event><symbol>WSO2</symbol>..</event></events>`; a message
may also be a single `<event>`. Custom: `@attributes(symbol='quote/sym', price='@price')`, an
XPath per attribute evaluated on each event element; CEP 4.0's global form `//quote/sym` is
read relative to the event (`.//quote/sym`), an absolute `/quote/sym` from the event itself.
`enclosing.element='//portfolio'` selects the element whose child elements are the events
(without it a message is one event), `namespaces='p=urn:a,q=urn:b'` gives the prefixes, and
`fail.on.missing.attribute='false'` reads a missing value as null.

Speed: the messages of a batch are parsed as one document, and each attribute is read for all
events of a container with one XPath (`*/path/text()`), after one more XPath has checked that
every event has exactly one value there; only containers that fail the check go event by event.

Output, default: the CEP 4.0 document, one `<events>` per message or per batch. Custom:
`@payload('<quote><sym>{{symbol}}</sym></quote>')` with values XML-escaped; a batch is wrapped
in `<events>` or in `enclosing.element='name'`."""

import re
from xml.sax.saxutils import escape as _xml_escape

from lxml import etree

from cep.mapping.base import InputMapper, OutputMapper, compile_template, payload_template
from cep.mapping.cep40 import grouped
from cep.mapping.convert import convert_column, to_text
from cep.mapping.errors import MappingConfigError, PayloadError
from cep.mapping.json_map import attribute_paths
from cep.mapping.spec import MapSpec, Schema

_DECL = re.compile(rb"^\s*<\?xml[^>]*\?>")
_ANY_DECL = re.compile(rb"<\?xml[^>]*\?>")
_PARSER = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False)
_ELEMENT_END = re.compile(r"(^|/)([\w.\-]+:)?[\w.\-*]+(\[[^\]]*\])?$")


def parse_namespaces(text, where):
    """`'p=urn:a, q=urn:b'` -> {"p": "urn:a", "q": "urn:b"}."""
    out = {}
    for part in filter(None, (x.strip() for x in str(text or "").split(","))):
        prefix, sep, uri = part.partition("=")
        if not sep or not prefix.strip() or not uri.strip():
            raise MappingConfigError(f"{where}: namespaces={text!r}: expected 'prefix=uri, ...'")
        out[prefix.strip()] = uri.strip()
    return out


class _Path:
    """One attribute's XPath: per event (`one`), and for a container's events at once
    (`col[depth]`: the values of every event; `leaf`: the test for "this event has one")."""

    def __init__(self, text, ns, where):
        self.text = text.strip()
        rel = self.text
        if rel.startswith("//"):
            rel = "." + rel
        elif rel.startswith("/"):
            rel = "self::" + rel[1:]
        self.rel = rel
        try:
            self.one = etree.XPath(rel, namespaces=ns, smart_strings=False)
        except etree.XPathSyntaxError as exc:
            raise MappingConfigError(f"{where}: XPath {text!r} is not valid: {exc}") from None
        element = bool(_ELEMENT_END.search(rel)) and "(" not in rel
        self.leaf = f"{rel}/text()" if element else rel
        try:
            self.col = {
                d: etree.XPath(f"{'*/' * d}{self.leaf}", namespaces=ns, smart_strings=False)
                for d in (1, 2)
            }
        except etree.XPathError:  # not a location path (a function): event by event
            self.col = None

    def value(self, event):
        found = self.one(event)
        if isinstance(found, list):
            if not found:
                raise KeyError(self.text)
            found = found[0]
        if isinstance(found, etree._Element):
            if len(found):  # an element with children: its XML (CEP 4.0 does the same)
                return etree.tostring(found, encoding="unicode", with_tail=False)
            return found.text or ""
        if isinstance(found, bool):
            return "true" if found else "false"
        if isinstance(found, float):
            return repr(int(found)) if found.is_integer() else repr(found)
        return str(found)


class XmlInputMapper(InputMapper):
    type = "xml"
    options = ("namespaces", "enclosing.element", "fail.on.missing.attribute")

    def __init__(self, spec: MapSpec, schema: Schema):
        super().__init__(spec, schema)
        ns = parse_namespaces(spec.option("namespaces"), self.where)
        self.fail_missing = spec.flag("fail.on.missing.attribute", True)
        enclosing = spec.option("enclosing.element")
        try:
            self.enclosing = etree.XPath(enclosing, namespaces=ns) if enclosing else None
        except etree.XPathError as exc:
            raise MappingConfigError(
                f"{self.where}: enclosing.element={enclosing!r} is not a valid XPath: {exc}"
            ) from None
        self.default = not spec.custom
        if self.default:
            sections = {
                i: f"{sec}/{inner}"
                for sec, attrs in grouped(schema.names).items()
                for i, inner in attrs
            }
            self.paths = [_Path(sections[i], ns, self.where) for i in range(len(schema.names))]
            self.flat = [_Path(n, ns, self.where) for n in schema.names]
        else:
            self.paths = attribute_paths(
                spec, schema, self.where, lambda v: _Path(v, ns, self.where)
            )
        # every event of a container has a value for every attribute: then columns of n
        # values each are one value per event, in order
        self.check = None
        if all(p.col is not None for p in self.paths):
            test = " and ".join(f"({p.leaf})" for p in self.paths)
            try:
                self.check = {
                    d: etree.XPath(f"count({'*/' * (d - 1)}*[{test}])", namespaces=ns)
                    for d in (1, 2)
                }
            except etree.XPathError:
                self.check = None

    # ------------------------------------------------------------ containers of events
    def _containers(self, payloads, errors):
        """[(container, depth, number of events, resolve)]: the events are the container's
        children (depth 1) or grandchildren (depth 2: a batch of `<events>` messages);
        `resolve()` lists them with the message index of each (only needed when one fails).
        A batch that parses as one document is one container."""
        wrapper = None if self.enclosing is not None else _parse_batch(payloads)
        if wrapper is not None:
            n = len(payloads)
            whole = lambda: (wrapper.findall("*"), list(range(n)))  # noqa: E731
            if not self.default:
                return [(wrapper, 1, n, whole)]
            grouped = int(_COUNT_EVENTS_ROOTS(wrapper))
            if grouped == 0:
                return [(wrapper, 1, n, whole)]
            if grouped == n:
                return [
                    (
                        wrapper,
                        2,
                        int(_COUNT_GRANDCHILDREN(wrapper)),
                        lambda: _grandchildren(wrapper),
                    )
                ]
            pairs = list(enumerate(wrapper.findall("*")))
        else:
            pairs = []
            for i, p in enumerate(payloads):
                try:
                    pairs.append((i, _parse_one(p)))
                except PayloadError as exc:
                    errors.append((i, str(exc)))
        out = []
        for i, root in pairs:
            if self.enclosing is not None:
                found = self.enclosing(root)
                found = (
                    [e for e in found if isinstance(e, etree._Element)]
                    if isinstance(found, list)
                    else []
                )
                if not found:
                    errors.append(
                        (
                            i,
                            f"no enclosing element "
                            f"{self.spec.option('enclosing.element')} in the message",
                        )
                    )
                    continue
                out.append(_children_of(found[0], i))
            elif self.default and etree.QName(root).localname == "events":
                out.append(_children_of(root, i))
            else:
                out.append((None, 1, 1, lambda r=root, i=i: ([r], [i])))
        return out

    def _decode(self, payloads):
        errors, rows = [], []
        for container, depth, n, resolve in self._containers(payloads, errors):
            rows.extend(self._rows(container, depth, n, resolve, errors))
        errors.sort(key=lambda e: e[0])
        return rows, errors

    def _rows(self, container, depth, n, resolve, errors):
        columns = None
        if (
            container is not None
            and n > 1
            and self.check is not None
            and self.check[depth](container) == n
        ):
            columns = [p.col[depth](container) for p in self.paths]
        if columns is None or any(len(c) != n for c in columns):
            return self._slow(*resolve(), errors)
        bad = {}
        typed = [
            convert_column(col, t, name, bad)
            for col, t, name in zip(columns, self.schema.types, self.schema.names)
        ]
        rows = list(zip(*typed))
        if bad:
            owners = resolve()[1]
            for k, reason in bad.items():
                errors.append((owners[k], reason))
            rows = [r for k, r in enumerate(rows) if k not in bad]
        return rows

    def _slow(self, events, owners, errors):
        rows = []
        for k, event in enumerate(events):
            try:
                rows.append(self._row(event))
            except PayloadError as exc:
                errors.append((owners[k], str(exc)))
        return rows

    def _row(self, event):
        paths = self.paths
        if (
            self.default
            and event.find("payloadData") is None
            and event.find("metaData") is None
            and event.find("correlationData") is None
        ):
            paths = self.flat
        values = []
        for p, name, kind in zip(paths, self.schema.names, self.schema.types):
            try:
                values.append([p.value(event)])
            except KeyError:
                if self.fail_missing:
                    raise PayloadError(
                        f"attribute {name!r}: nothing at {p.text} in <{event.tag}>"
                    ) from None
                values.append([None])
        bad = {}
        row = tuple(
            convert_column(v, t, n, bad)[0]
            for v, t, n in zip(values, self.schema.types, self.schema.names)
        )
        if bad:
            raise PayloadError(bad[0])
        return row


def _as_bytes(p):
    if type(p) is bytes:
        return p
    if type(p) is str:
        return p.encode("utf-8")
    if isinstance(p, (bytearray, memoryview)):
        return bytes(p)
    raise PayloadError(f"expected an XML message, got {type(p).__name__}")


def _strip_decl(b):
    return _DECL.sub(b"", b) if b[:5] == b"<?xml" or b[:1].isspace() else b


def _parse_one(p):
    try:
        return etree.fromstring(_strip_decl(_as_bytes(p)), _PARSER)
    except etree.XMLSyntaxError as exc:
        raise PayloadError(f"not XML: {exc}") from None


def _parse_batch(payloads):
    """A `<_batch>` element holding every message's root, parsed at once, or None when one of
    them is not a single well-formed element."""
    try:
        try:
            body = b"".join(payloads)
        except TypeError:  # str messages (or others: _as_bytes says which)
            body = b"".join([_as_bytes(p) for p in payloads])
        if b"<?xml" in body:
            body = _ANY_DECL.sub(b"", body)
        wrapper = etree.fromstring(b"<_batch>" + body + b"</_batch>", _PARSER)
    except (etree.XMLSyntaxError, PayloadError):
        return None
    if _COUNT_ROOTS(wrapper) != len(payloads) or _STRAY_TEXT(wrapper):
        return None
    return wrapper


_COUNT_ROOTS = etree.XPath("count(*)")
_COUNT_EVENTS_ROOTS = etree.XPath("count(*[local-name() = 'events'])")
_COUNT_GRANDCHILDREN = etree.XPath("count(*/*)")


def _children_of(element, index):
    def resolve():
        kids = element.findall("*")
        return kids, [index] * len(kids)

    return element, 1, int(_COUNT_ROOTS(element)), resolve


def _grandchildren(wrapper):
    events, owners = [], []
    for i, root in enumerate(wrapper.findall("*")):
        kids = root.findall("*")
        events.extend(kids)
        owners.extend([i] * len(kids))
    return events, owners


_STRAY_TEXT = etree.XPath("boolean(text()[normalize-space()])")


# ------------------------------------------------------------------------- output
def _xml_value(v):
    return _xml_escape(to_text(v)) if v is not None else ""


class XmlOutputMapper(OutputMapper):
    type = "xml"
    options = ("enclosing.element", "validate.xml")

    def __init__(self, spec: MapSpec, schema: Schema):
        super().__init__(spec, schema)
        template = payload_template(spec, self.where)
        self.enclosing = spec.option("enclosing.element")
        if self.enclosing and not re.match(
            r"^[A-Za-z_][\w.\-]*(:[A-Za-z_][\w.\-]*)?$", str(self.enclosing)
        ):
            raise MappingConfigError(
                f"{self.where}: enclosing.element={self.enclosing!r} must be an element name"
            )
        self.custom = template is not None
        if self.custom:
            self._fill = compile_template(template, schema, _xml_value, self.where)
            if spec.flag("validate.xml", False):
                sample = tuple("1" for _ in schema.names)
                try:
                    etree.fromstring(self._fill([(0, sample)])[0].encode())
                except etree.XMLSyntaxError as exc:
                    raise MappingConfigError(
                        f"{self.where}: @payload does not give XML: {exc}"
                    ) from None
        else:
            parts = []
            for sec, attrs in grouped(schema.names).items():
                inner = "".join(
                    f"<{n}>{{{{{{{i}}}}}}}</{n}>".replace("{{{", "{{").replace("}}}", "}}")
                    for i, n in attrs
                )
                parts.append(f"<{sec}>{inner}</{sec}>")
            template = (
                "<event>"
                + "".join(p.replace("{{", "\0").replace("}}", "\1") for p in parts)
                + "</event>"
            )
            template = re.sub(
                "\0(\\d+)\1", lambda m: "{{" + schema.names[int(m.group(1))] + "}}", template
            )
            self._fill = compile_template(template, schema, _xml_value, self.where)

    def encode(self, events) -> list:
        if self.custom:
            return self._fill(events)
        return [f"<events>{x}</events>" for x in self._fill(events)]

    def encode_batch(self, events) -> str:
        tag = self.enclosing or "events"
        return f"<{tag}>" + "".join(self._fill(events)) + f"</{tag}>"
