"""What a worker needs to know about a plan: its imported and exported streams, their
definitions and their @source/@sink settings, from the manager's deployment description
(PROTOCOL.md section 3) or from a compiled plan (standalone mode)."""

from dataclasses import dataclass, field
from typing import Optional

from cep.model import Attribute, InsertInto, Partition, StreamDefinition, TYPES
from cep.worker.exceptions import DeploymentFormatError
from publishers.sinks import map_of, sink_specs_from_annotations


@dataclass(frozen=True)
class StreamSpec:
    """One imported or exported stream: Siddhi id, definition, and source or sink specs."""

    stream: str
    definition: StreamDefinition
    specs: tuple = ()  # of {"type": ..., "options": {...}}
    cep_stream: Optional[str] = None


@dataclass(frozen=True)
class PlanSpec:
    """A plan as the worker serves it; `plan` is the compiled model (standalone only)."""

    tenant: int
    name: str
    version: int
    imported: tuple = ()
    exported: tuple = ()
    plan: object = field(default=None, compare=False, repr=False)
    # the manager's word on how this plan's publisher bolts authenticate ("token": PLAIN with
    # the plan's token, derived from the cluster secret; "curve"; "none")
    publisher_auth: str = "none"
    # the manager's topology.transport ("zmq" or "nats") and, for nats, the name of the
    # server's connection in connections.brokers ("": nats://127.0.0.1:4222)
    transport: str = "zmq"
    transport_connection: str = ""

    @property
    def key(self):
        return self.tenant, self.name


def spec_from_deployment(entry):
    """A PlanSpec from one `plans[]` entry of GET /api/v1/deployments."""
    try:
        tenant, name = int(entry["tenant"]), str(entry["name"])
        if not -(2**31) <= tenant < 2**31:  # tenant ids are 32-bit
            raise ValueError(f"tenant id {tenant} is outside the 32-bit range")
        version = int(entry.get("version", 0))
        where = f"plan {name} (tenant {tenant})"
        imported = tuple(_stream_from_entry(s, "sources", where) for s in entry.get("imported", ()))
        exported = tuple(_stream_from_entry(s, "sinks", where) for s in entry.get("exported", ()))
    except (KeyError, TypeError, ValueError) as exc:
        raise DeploymentFormatError(
            f"deployment entry {str(entry)[:200]}: {type(exc).__name__}: {exc}"
        ) from None
    return PlanSpec(
        tenant,
        name,
        version,
        imported,
        exported,
        publisher_auth=str(entry.get("publisherAuth") or "none"),
        transport=str(entry.get("transport") or "zmq").lower(),
        transport_connection=str(entry.get("transportConnection") or ""),
    )


def _stream_from_entry(s, specs_key, where):
    stream = str(s["stream"])
    attrs = []
    for attr_name, type_name in s["attributes"]:
        kind = TYPES.get(str(type_name).lower())
        if kind is None:
            raise DeploymentFormatError(
                f"{where}, stream {stream}: attribute {attr_name!r} has unknown type {type_name!r}"
            )
        attrs.append(Attribute(str(attr_name), kind))
    definition = StreamDefinition(stream, tuple(attrs), text=s.get("definition") or "")
    specs = tuple(_io_spec(x) for x in (s.get(specs_key) or ()))
    return StreamSpec(stream, definition, specs, s.get("cepStream"))


def spec_from_plan(plan, tenant, version=0):
    """A PlanSpec from a compiled ExecutionPlan.

    Imported: streams with @Import or @source, else every defined stream that no query writes.
    Exported: streams with @Export or @sink, else every stream a query inserts into."""
    written = _insert_targets(plan)
    defined = [s for s in plan.streams if s.id not in plan.inferred_streams]
    imported = [s for s in defined if _has(s, "Import", "source")]
    if not imported:
        imported = [s for s in defined if s.id not in written]
    exported = [s for s in plan.streams if _has(s, "Export", "sink")]
    if not exported:
        exported = [s for s in plan.streams if s.id in written]
    return PlanSpec(
        tenant,
        plan.name,
        version,
        tuple(StreamSpec(s.id, s, _source_specs(s), _value(s, "Import")) for s in imported),
        tuple(
            StreamSpec(
                s.id, s, tuple(sink_specs_from_annotations(s.annotations)), _value(s, "Export")
            )
            for s in exported
        ),
        plan,
    )


def _insert_targets(plan):
    queries = list(plan.queries)
    for p in plan.elements:
        if isinstance(p, Partition):
            queries.extend(p.queries)
    return {
        q.output.target for q in queries if isinstance(q.output, InsertInto) and not q.output.inner
    }


def _has(definition, *names):
    return any(a.matches(n) for a in definition.annotations for n in names)


def _value(definition, name):
    for a in definition.annotations:
        if a.matches(name):
            return a.value
    return None


def _io_spec(x):
    """A source or sink spec of a deployment entry: type, options and (when given) its @map."""
    spec = {"type": str(x["type"]), "options": dict(x.get("options") or {})}
    if x.get("map"):
        spec["map"] = dict(x["map"])
    return spec


def _source_specs(definition):
    specs = []
    for a in definition.annotations:
        if a.matches("source"):
            options = {k.lower(): v for k, v in a.elements if k is not None}
            spec = {"type": options.pop("type", ""), "options": options}
            mapping = map_of(a)
            if mapping is not None:
                spec["map"] = mapping
            specs.append(spec)
    return tuple(specs)
