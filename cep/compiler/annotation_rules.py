"""The rules for annotations: plan (`@Plan:*`/`@App:*`), stream (`@Import`, `@Export`,
`@source`, `@sink`), table (`@IndexBy`, `@PrimaryKey`), query and partition (`@info`, `@name`,
`@dist`, `@purge`). The engine ignores most of them; the manager relies on them."""

import re

from cep.compiler.literals import parse_time_string
from cep.connectors import problems
from cep.errors import AnnotationError, DuplicateDefinitionError, UnknownAttributeError
from cep.mapping import INPUT, OUTPUT, MappingConfigError, MapSpec, check_map
from cep.model import Partition, find_annotation
from cep.model.sink_store import rdbms_sink_spec
from cep.model.table_store import store_spec
from cep.model.queries import SIDDHI_MODES

PLAN_ANNOTATIONS = (
    "name",
    "description",
    "trace",
    "statistics",
    "playback",
    "dist",
    "async",
    "enablestatistics",
    "siddhi",
)
_STREAM_REF = re.compile(r"^[a-zA-Z0-9_.]+:\d+\.\d+\.\d+$")
_INT = re.compile(r"^\s*\d+\s*$")


def require_plan_name(plan):
    """Deploying needs `@Plan:name('...')`: raise AnnotationError when it is missing."""
    if not plan.name:
        raise AnnotationError(
            "the plan has no name: add @Plan:name('MyPlan') at its top", None, plan.source
        )
    return plan.name


def check_annotations(plan):
    """Check every annotation of `plan`; raise the first AnnotationError."""
    _check_plan_annotations(plan)
    for definition in plan.streams:
        _check_stream_annotations(definition)
    for table in plan.tables:
        _check_table_annotations(table)
    groups, names = {}, {}
    for element in plan.elements:
        _check_element(element, groups, names, in_partition=False)
        if isinstance(element, Partition):
            _check_purge(element)
            for query in element.queries:
                _check_element(query, groups, names, in_partition=True)


def _check_plan_annotations(plan):
    seen = {}
    for a in plan.annotations:
        key = a.name.lower()
        if key not in PLAN_ANNOTATIONS:
            raise AnnotationError(
                f"unknown plan annotation @{a.namespace}:{a.name} (known: "
                f"{', '.join(PLAN_ANNOTATIONS[:6])})",
                a.span,
            )
        if key in seen and key != "dist":
            raise AnnotationError(f"@{a.namespace}:{a.name} is given twice", a.span)
        seen[key] = a
    name = seen.get("name")
    if name is not None:
        value = name.value
        if not value or any(c.isspace() for c in value):
            raise AnnotationError(
                f"plan name {value!r} must be non-empty and have no whitespace", name.span
            )
    mode = seen.get("siddhi")
    if mode is not None and plan.siddhi_mode not in SIDDHI_MODES:
        raise AnnotationError(
            f"@{mode.namespace}:{mode.name}({mode.value!r}) is not a known "
            f"Siddhi compatibility mode: use '3.2' (exact Siddhi 3.2, the "
            f"default) or 'fixed' (Siddhi 3.2 bugs fixed)",
            mode.span,
        )
    for a in plan.annotations:
        if a.name.lower() == "dist":
            for key, value in a.elements:
                _require_count(a, key or "value", value)


def _require_count(annotation, key, value):
    if value is None or not _INT.match(value):
        raise AnnotationError(
            f"@{annotation.name}({key}=...) must be a whole number, not {value!r}", annotation.span
        )
    return int(value)


def _check_stream_annotations(definition):
    refs = {}
    for a in definition.annotations:
        lowered = a.name.lower()
        if lowered in ("import", "export") and not a.namespace:
            if lowered in refs:
                raise AnnotationError(
                    f"stream '{definition.id}' has two @{a.name} annotations", a.span
                )
            value = a.value or ""
            if not _STREAM_REF.match(value):
                raise AnnotationError(
                    f"@{a.name}({value!r}) must name a stream as 'name:version', the name of "
                    f"[a-zA-Z0-9_.] and the version d.d.d, e.g. 'StockStream:1.0.0'",
                    a.span,
                )
            refs[lowered] = a
        elif lowered in ("source", "sink") and a.get("type") is None:
            raise AnnotationError(f"@{a.name} on stream '{definition.id}' needs type='...'", a.span)
        elif lowered in ("source", "sink"):
            _check_connector(definition, a, lowered)
            if lowered == "sink":
                _check_sink_delivery(definition, a)
    if len(refs) == 2:
        raise AnnotationError(
            f"stream '{definition.id}' cannot be both imported and exported", refs["export"].span
        )


def _check_connector(definition, a, direction):
    """The type and options of a @source/@sink against cep.connectors, and its @map against
    the stream (cep.mapping): unknown ones are errors listing what exists."""
    given = [k for k, _ in a.elements if k is not None and k.lower() != "type"]
    found = problems(direction, a.get("type"), given)
    if found:
        raise AnnotationError(f"{found[0]} (on stream '{definition.id}')", a.span)
    mapping = find_annotation(a.annotations, "map")
    if direction == "sink" and str(a.get("type")).strip().lower() == "rdbms":
        _check_rdbms_sink(definition, a, mapping)
        return
    if mapping is None:
        return
    try:
        check_map(
            MapSpec.from_annotation(mapping), definition, INPUT if direction == "source" else OUTPUT
        )
    except MappingConfigError as exc:
        raise AnnotationError(str(exc), mapping.span if mapping.span.line else a.span) from None


def _check_rdbms_sink(definition, a, mapping):
    """Mode, keys and lengths of an rdbms sink against the stream (cep/model/sink_store.py);
    rows go into columns, so a @map has nothing to shape."""
    where = f"@{a.name}(type='rdbms') on stream '{definition.id}'"
    spec = MapSpec.from_annotation(mapping) if mapping is not None else None
    if spec is not None and (spec.type != "passthrough" or spec.options or spec.custom):
        raise AnnotationError(
            f"{where}: an rdbms sink writes one column per attribute; it takes no @map",
            mapping.span if mapping.span.line else a.span,
        )
    options = {
        k.lower(): v
        for k, v in a.elements
        if k is not None and k.lower() not in ("type", "delivery", "dedup")
    }
    try:
        rdbms_sink_spec(options, definition)
    except ValueError as exc:
        raise AnnotationError(f"{where}: {exc}", a.span) from None


# output delivery guarantees (publishers/delivery.py holds the same lists for the worker)
_DELIVERY = ("at-least-once", "exactly-once", "at-most-once")
# file and redis stage output until the checkpoint; nats lets JetStream drop replayed results
# by their message ids
_TWO_PHASE_SINKS = ("file", "redis", "nats")


def _check_sink_delivery(definition, a):
    delivery = a.get("delivery")
    where = f"@{a.name}(type='{a.get('type')}') on stream '{definition.id}'"
    if delivery is not None and delivery.strip().lower() not in _DELIVERY:
        raise AnnotationError(
            f"{where}: delivery={delivery!r} is not one of {', '.join(_DELIVERY)}", a.span
        )
    if (
        delivery is not None
        and delivery.strip().lower() == "exactly-once"
        and str(a.get("type")).lower() not in _TWO_PHASE_SINKS
    ):
        raise AnnotationError(
            f"{where}: delivery='exactly-once' needs a sink that holds its "
            f"output until the checkpoint covering it completes (file or "
            f"redis) or drops replayed results by their identity (nats); use 'at-least-once' or 'at-most-once'",
            a.span,
        )
    dedup = a.get("dedup")
    if dedup is not None and dedup.strip().lower() not in ("true", "false"):
        raise AnnotationError(f"{where}: dedup={dedup!r} is not true or false", a.span)


def _check_table_annotations(table):
    store_spec(table)  # @from(eventtable=...) / @store(type=...): a known backend and options
    for a in table.annotations:
        lowered = a.name.lower()
        if lowered not in ("indexby", "primarykey"):
            continue
        values = [v for _, v in a.elements]
        if not values:
            raise AnnotationError(f"@{a.name} needs an attribute name", a.span)
        if lowered == "indexby" and len(values) > 1:
            raise AnnotationError(
                f"@IndexBy takes one attribute, not {len(values)}: the "
                f"in-memory table indexes a single attribute",
                a.span,
            )
        for v in values:
            if table.index_of(v) < 0:
                raise UnknownAttributeError(
                    f"@{a.name}('{v}'): table '{table.id}' has no attribute '{v}'", a.span
                )


def _check_element(element, groups, names, in_partition):
    name = element.name if hasattr(element, "name") else None
    if name is not None:
        if not name.strip():
            raise AnnotationError("a query name must not be empty", element.span)
        if name in names:
            raise DuplicateDefinitionError(f"query name '{name}' is used twice", element.span)
        names[name] = element
    dist = find_annotation(element.annotations, "dist")
    if dist is None:
        return
    if in_partition:
        raise AnnotationError(
            "@dist is not allowed inside a partition: annotate the partition instead", dist.span
        )
    _check_dist(dist, groups)


def _check_dist(dist, groups):
    parallel = dist.get("parallel")
    parallel = 1 if parallel is None else max(1, _require_count(dist, "parallel", parallel))
    group = dist.get("execGroup")
    if group is None:
        return
    if not group or any(c.isspace() for c in group):
        raise AnnotationError(
            f"execGroup {group!r} must be non-empty and have no whitespace", dist.span
        )
    first = groups.setdefault(group, (parallel, dist))
    if first[0] != parallel:
        raise AnnotationError(
            f"execGroup '{group}' has parallel={first[0]} at line {first[1].span.line} but "
            f"parallel={parallel} here: all members of a group share one parallelism",
            dist.span,
        )


def _check_purge(partition):
    purge = find_annotation(partition.annotations, "purge")
    if purge is None:
        return
    enable = (purge.get("enable") or "true").lower()
    if enable not in ("true", "false"):
        raise AnnotationError(
            f"@purge(enable=...) must be 'true' or 'false', not {enable!r}", purge.span
        )
    for key in ("interval", "idle.period"):
        value = purge.get(key)
        if value is not None and parse_time_string(value) is None:
            raise AnnotationError(
                f"@purge({key}={value!r}) is not a time such as '1 min'", purge.span
            )
