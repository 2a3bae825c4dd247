"""Plan validation: definitions, queries and partitions in order, with inferred output streams.

`validate(plan)` returns the plan with the inferred streams added (and each partition's inner
streams), or raises the first positioned error."""

import dataclasses

from cep.catalog import scripts
from cep.compiler.annotation_rules import check_annotations
from cep.compiler.input_checks import check_window
from cep.compiler.query_checks import check_query, match_definition
from cep.compiler.scope import AttributeScope
from cep.compiler.types import expression_type, require_bool
from cep.errors import DuplicateDefinitionError, InvalidQueryError, UnknownStreamError
from cep.model import (
    Partition,
    RangePartitionKey,
    StreamDefinition,
    TableDefinition,
    TriggerDefinition,
    WindowDefinition,
)


class PlanContext:
    """The definitions a query can see while the plan is checked in order."""

    def __init__(self, plan):
        self.streams = {}
        self.tables = {}
        self.triggers = {}
        self.windows = {}  # named windows (also in `streams`: read and inserted like one)
        self.inferred = []
        self.inner = None  # name -> StreamDefinition, inside a partition
        definitions = plan.streams + plan.tables + plan.triggers + plan.windows
        for definition in sorted(definitions, key=lambda d: d.span.start_pos):
            self._define(definition)

    def _define(self, definition):
        name = definition.id
        if name in self.streams or name in self.tables or name in self.triggers:
            raise DuplicateDefinitionError(f"'{name}' is defined twice", definition.span)
        _check_attribute_names(definition)
        if isinstance(definition, TableDefinition):
            self.tables[name] = definition
        elif isinstance(definition, TriggerDefinition):
            self.triggers[name] = definition
        elif isinstance(definition, WindowDefinition):
            check_window(
                definition.window,
                AttributeScope((name,), definition.attributes, f"window '{name}'"),
            )
            self.windows[name] = self.streams[name] = definition
        else:
            self.streams[name] = definition

    def is_stream(self, name):
        return name in self.streams or name in self.triggers

    def input_definition(self, stream):
        """The definition a query input reads (stream, trigger, table or inner stream)."""
        if stream.inner:
            found = (self.inner or {}).get(stream.stream_id)
            if found is None:
                where = "in this partition" if self.inner is not None else "outside a partition"
                raise UnknownStreamError(
                    f"inner stream '#{stream.stream_id}' is not defined {where}", stream.span
                )
            return found
        found = (
            self.streams.get(stream.stream_id)
            or self.triggers.get(stream.stream_id)
            or self.tables.get(stream.stream_id)
        )
        if found is None:
            raise UnknownStreamError(
                f"stream '{stream.stream_id}' is not defined (define it, or insert into it "
                f"from an earlier query)",
                stream.span,
            )
        return found

    def infer_stream(self, definition):
        self.streams[definition.id] = definition
        self.inferred.append(definition)

    def insert_inner(self, output, outputs):
        if self.inner is None:
            raise InvalidQueryError(
                f"inner stream '#{output.target}' can only be used inside a partition", output.span
            )
        existing = self.inner.get(output.target)
        if existing is not None:
            match_definition(existing, outputs, output.span, "inner stream")
        else:
            self.inner[output.target] = StreamDefinition(output.target, outputs, span=output.span)


def _check_attribute_names(definition):
    seen = set()
    for a in getattr(definition, "attributes", ()):
        if a.name in seen:
            raise DuplicateDefinitionError(
                f"attribute '{a.name}' is defined twice in '{definition.id}'", a.span
            )
        seen.add(a.name)


def validate(plan):
    """The checked plan, with inferred streams and partition inner streams filled in."""
    with scripts.in_scope(scripts.check_definitions(plan.functions)):
        return _validate(plan)


def _validate(plan):
    ctx = PlanContext(plan)
    check_annotations(plan)
    elements = []
    for element in plan.elements:
        if isinstance(element, Partition):
            elements.append(_check_partition(element, ctx))
        else:
            check_query(element, ctx)
            elements.append(element)
    inferred = tuple(ctx.inferred)
    return dataclasses.replace(
        plan,
        streams=plan.streams + inferred,
        elements=tuple(elements),
        inferred_streams=frozenset(d.id for d in inferred),
    )


def _check_partition(partition, ctx):
    seen = set()
    for key in partition.keys:
        definition = ctx.streams.get(key.stream_id) or ctx.triggers.get(key.stream_id)
        if key.stream_id in ctx.windows:
            raise InvalidQueryError(
                f"'{key.stream_id}' is a named window: a partition can key streams only", key.span
            )
        if definition is None:
            kind = "a table" if key.stream_id in ctx.tables else "not a defined stream"
            raise UnknownStreamError(f"partition key stream '{key.stream_id}' is {kind}", key.span)
        if key.stream_id in seen:
            raise DuplicateDefinitionError(
                f"stream '{key.stream_id}' is partitioned twice", key.span
            )
        seen.add(key.stream_id)
        _check_key(
            key,
            AttributeScope((key.stream_id,), definition.attributes, f"stream '{key.stream_id}'"),
            ctx,
        )
    ctx.inner = {}
    try:
        for query in partition.queries:
            check_query(query, ctx)
        inner = tuple(ctx.inner.values())
    finally:
        ctx.inner = None
    if "inner_streams" in {f.name for f in dataclasses.fields(Partition)}:
        return dataclasses.replace(partition, inner_streams=inner)
    return partition


def _check_key(key, scope, ctx):
    if isinstance(key, RangePartitionKey):
        for rc in key.ranges:
            require_bool(rc.condition, scope, "a range partition condition", tables=ctx.tables)
    else:
        expression_type(key.expression, scope)
