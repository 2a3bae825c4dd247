"""Read a CEP 4.0 deployment: event streams, event receivers, event publishers and execution
plans, from a folder (`eventstreams/*.json`, `eventreceivers/*.xml`, `eventpublishers/*.xml`,
`executionplans/*.siddhiql`, found at any depth) or a `.car` archive (a zip of the same
artifacts). Files are recognised by content: a JSON object with `streamId` or `name` and
`version`, an XML document whose root is `eventReceiver` or `eventPublisher`, a `.siddhiql`
text. What cannot be read is a Problem naming the file (and the element)."""

import json
import os
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from lxml import etree

_PARSER = etree.XMLParser(resolve_entities=False, no_network=True)
MAX_FILE = 16 * 1024 * 1024


@dataclass
class Problem:
    """One report line: `file: element: message`; `level` 'error' (not converted),
    'warning' (converted, with a change) or 'note'."""

    file: str
    element: str
    message: str
    level: str = "error"

    def __str__(self):
        where = f"{self.file}: {self.element}" if self.element else self.file
        return f"{self.level}: {where}: {self.message}"


@dataclass
class Stream:
    name: str
    version: str
    attributes: list  # [(name, siddhi type)] with meta_/correlation_ prefixes
    file: str = ""

    @property
    def id(self):
        return f"{self.name}:{self.version}"


@dataclass
class Mapping:
    """A receiver's or publisher's `<mapping>`: type, custom or not, its properties (a list of
    (from attributes, to attributes) dicts), parentXpath, xpath definitions, inline text."""

    type: str
    custom: bool
    properties: list = field(default_factory=list)
    parent_xpath: str = ""
    namespaces: dict = field(default_factory=dict)
    inline: str = None
    registry: str = None


@dataclass
class Artifact:
    """An event receiver (`kind` 'receiver') or event publisher ('publisher')."""

    kind: str
    name: str
    adapter: str
    properties: dict
    mapping: Mapping
    stream: str  # name:version it feeds (receiver) or reads (publisher)
    file: str = ""


@dataclass
class Deployment:
    streams: dict = field(default_factory=dict)  # id -> Stream
    receivers: list = field(default_factory=list)
    publishers: list = field(default_factory=list)
    plans: list = field(default_factory=list)  # (file, text)
    problems: list = field(default_factory=list)


_TYPES = {
    "string": "string",
    "int": "int",
    "long": "long",
    "float": "float",
    "double": "double",
    "bool": "bool",
    "boolean": "bool",
}


def read_deployment(path) -> Deployment:
    """A Deployment from a folder or a `.car`/`.zip` archive."""
    path = Path(path)
    dep = Deployment()
    if path.is_file() and zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as zf:
            for info in sorted(zf.infolist(), key=lambda i: i.filename):
                if info.is_dir():
                    continue
                if info.file_size > MAX_FILE:
                    dep.problems.append(
                        Problem(
                            f"{path.name}!{info.filename}",
                            "",
                            "larger than 16 MiB, skipped",
                            "warning",
                        )
                    )
                    continue
                _classify(dep, f"{path.name}!{info.filename}", zf.read(info))
    elif path.is_dir():
        for root, dirs, files in os.walk(path):
            dirs.sort()
            for f in sorted(files):
                full = Path(root) / f
                rel = str(full.relative_to(path))
                if full.stat().st_size > MAX_FILE:
                    dep.problems.append(Problem(rel, "", "larger than 16 MiB, skipped", "warning"))
                    continue
                _classify(dep, rel, full.read_bytes())
    else:
        raise FileNotFoundError(f"{path}: not a folder or a .car archive")
    return dep


def _classify(dep, name, data):
    lower = name.lower()
    if lower.endswith(".siddhiql"):
        dep.plans.append((name, data.decode("utf-8", "replace")))
    elif lower.endswith(".json"):
        _stream(dep, name, data)
    elif lower.endswith(".xml"):
        _xml(dep, name, data)


def _stream(dep, name, data):
    try:
        doc = json.loads(data)
    except ValueError as exc:
        dep.problems.append(Problem(name, "", f"not JSON: {exc}"))
        return
    if not isinstance(doc, dict) or not (doc.get("streamId") or doc.get("name")):
        return  # some other JSON file
    sid = doc.get("streamId") or f"{doc.get('name')}:{doc.get('version', '1.0.0')}"
    sname, _, version = sid.partition(":")
    attrs = []
    for section, prefix in (
        ("metaData", "meta_"),
        ("correlationData", "correlation_"),
        ("payloadData", ""),
    ):
        for a in doc.get(section) or ():
            kind = _TYPES.get(str(a.get("type", "")).lower())
            if kind is None:
                dep.problems.append(
                    Problem(
                        name,
                        f"{section}/{a.get('name')}",
                        f"unknown attribute type {a.get('type')!r}",
                    )
                )
                kind = "string"
            attrs.append((prefix + str(a.get("name")), kind))
    dep.streams[sid] = Stream(sname, version or "1.0.0", attrs, name)


def _xml(dep, name, data):
    try:
        root = etree.fromstring(data, _PARSER)
    except etree.XMLSyntaxError as exc:
        dep.problems.append(Problem(name, "", f"not XML: {exc}"))
        return
    tag = etree.QName(root).localname
    if tag in _CEP3:
        dep.problems.append(
            Problem(
                name,
                tag,
                "a CEP 3.x artifact (CEP 4.0 uses event receivers and publishers): skipped",
                "warning",
            )
        )
        return
    if tag not in ("eventReceiver", "eventPublisher"):
        return
    kind = "receiver" if tag == "eventReceiver" else "publisher"
    adapter_el = _child(root, "from" if kind == "receiver" else "to")
    stream_el = _child(root, "to" if kind == "receiver" else "from")
    mapping_el = _child(root, "mapping")
    if adapter_el is None or stream_el is None or mapping_el is None:
        dep.problems.append(Problem(name, tag, "needs <from>, <mapping> and <to>"))
        return
    props = {p.get("name"): (p.text or "").strip() for p in _children(adapter_el, "property")}
    sname, version = stream_el.get("streamName"), stream_el.get("version") or "1.0.0"
    art = Artifact(
        kind,
        root.get("name") or Path(name).stem,
        str(adapter_el.get("eventAdapterType") or ""),
        props,
        _mapping(mapping_el),
        f"{sname}:{version}",
        name,
    )
    (dep.receivers if kind == "receiver" else dep.publishers).append(art)


_CEP3 = (
    "eventBuilder",
    "eventFormatter",
    "inputEventAdaptorConfiguration",
    "outputEventAdaptorConfiguration",
    "executionPlan",
)


def _mapping(el):
    m = Mapping(
        str(el.get("type") or "").lower(),
        el.get("customMapping") == "enable",
        parent_xpath=el.get("parentXpath") or el.get("parentSelectorXpath") or "",
    )
    for d in _children(el, "xpathDefinition"):
        m.namespaces[d.get("prefix")] = d.get("namespace")
    for p in _children(el, "property"):
        frm, to = _child(p, "from"), _child(p, "to")
        m.properties.append(
            (dict(frm.attrib) if frm is not None else {}, dict(to.attrib) if to is not None else {})
        )
    inline = _child(el, "inline")
    if inline is not None:  # a text template, or (XML mappings) the template's elements
        m.inline = (inline.text or "") + "".join(
            etree.tostring(c, encoding="unicode", with_tail=True)
            for c in inline
            if isinstance(c.tag, str)
        )
    registry = _child(el, "registry")
    if registry is not None:
        m.registry = (registry.text or "").strip()
    return m


def _child(el, name):
    for c in el:
        if isinstance(c.tag, str) and etree.QName(c).localname == name:
            return c
    return None


def _children(el, name):
    return [c for c in el if isinstance(c.tag, str) and etree.QName(c).localname == name]
