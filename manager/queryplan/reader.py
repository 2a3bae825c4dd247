"""Read an XML query plan back into plain values for the topology builder."""

from dataclasses import dataclass, field

from lxml import etree

from manager.queryplan.validate import stream_id, validate_query_plan


@dataclass(frozen=True)
class StreamSpec:
    """A `stream` element: id, definition text and its partition attribute (or None)."""

    id: str
    definition: str
    partition: str = None


@dataclass(frozen=True)
class ProcessorSpec:
    """An `event-processor`: one Siddhi bolt."""

    name: str
    parallel: int
    enforce: bool
    table_definitions: str
    inputs: tuple
    queries: str
    outputs: tuple
    window_definitions: str = ""  # the named windows this processor holds


@dataclass(frozen=True)
class QueryPlan:
    """The receiver, processors and publisher of a query plan, and its XML text."""

    receiver_parallel: int
    imported: tuple
    processors: tuple
    publisher_parallel: int
    exported: tuple
    xml: str = field(default="", repr=False)


def _streams(parent, path):
    return tuple(
        StreamSpec(stream_id(s.text), s.text, s.get("partition")) for s in parent.iterfind(path)
    )


def read_query_plan(xml):
    """Parse and validate XML text into a QueryPlan."""
    root = validate_query_plan(xml)
    receiver = root.find("event-receiver")
    publisher = root.find("event-publisher")
    processors = tuple(
        ProcessorSpec(
            p.get("name"),
            int(p.get("parallel")),
            p.get("enforceParallel") == "true",
            p.findtext("table-definitions") or "",
            _streams(p, "input-streams/stream"),
            p.findtext("queries") or "",
            _streams(p, "output-streams/stream"),
            p.findtext("window-definitions") or "",
        )
        for p in root.iterfind("event-processor")
    )
    return QueryPlan(
        int(receiver.get("parallel")),
        _streams(receiver, "streams/stream"),
        processors,
        int(publisher.get("parallel")),
        _streams(publisher, "input-streams/stream"),
        xml if isinstance(xml, str) else etree.tostring(xml, encoding="unicode"),
    )
