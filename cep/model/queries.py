"""Queries, partitions and the execution plan."""

from dataclasses import dataclass, field
from typing import Optional, Union

from cep.model.annotations import Annotation, find_annotation
from cep.model.definitions import (
    FunctionDefinition,
    StreamDefinition,
    TableDefinition,
    TriggerDefinition,
    WindowDefinition,
)
from cep.model.expressions import Expression, Variable
from cep.model.inputs import InputStream
from cep.model.span import Span, NO_SPAN

SIDDHI_EXACT, SIDDHI_FIXED = "3.2", "fixed"  # `@Plan:siddhi(...)` values
SIDDHI_MODES = (SIDDHI_EXACT, SIDDHI_FIXED)


@dataclass(frozen=True)
class OutputAttribute:
    """`expression as rename` in a select clause (rename defaults to the attribute's name)."""

    rename: str
    expression: Expression
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True)
class OrderByAttribute:
    variable: Expression
    ascending: bool = True


@dataclass(frozen=True)
class Selector:
    """`select ... [group by ...] [having ...] [order by ...] [limit N]`; `select *` sets select_all."""

    attributes: tuple[OutputAttribute, ...] = ()
    select_all: bool = False
    group_by: tuple[Variable, ...] = ()
    having: Optional[Expression] = None
    order_by: tuple[OrderByAttribute, ...] = ()
    limit: Optional[int] = None
    span: Span = field(default=NO_SPAN, compare=False)


# --- outputs; event_type is 'current' | 'expired' | 'all' ---


@dataclass(frozen=True)
class InsertInto:
    """`insert [current|expired|all events] into [#]Stream` (also into a table)."""

    target: str
    event_type: str = "current"
    inner: bool = False
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True)
class DeleteFrom:
    """`delete Table [for ... events] on cond`."""

    target: str
    on: Expression
    event_type: str = "current"
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True)
class UpdateTable:
    """`update Table on cond` (Siddhi 3: selected attributes update same-named columns), or
    Siddhi 4's `update Table set T.a = expr, ... on cond` (`assignments` of (Variable, Expression))."""

    target: str
    on: Expression
    assignments: tuple[tuple[Variable, Expression], ...] = ()
    event_type: str = "current"
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True)
class UpdateOrInsert:
    """`insert overwrite Table on cond` (Siddhi 3) / `update or insert into Table on cond` (4+)."""

    target: str
    on: Expression
    assignments: tuple[tuple[Variable, Expression], ...] = ()
    event_type: str = "current"
    span: Span = field(default=NO_SPAN, compare=False)


OutputAction = Union[InsertInto, DeleteFrom, UpdateTable, UpdateOrInsert]


@dataclass(frozen=True)
class OutputRate:
    """`output [all|first|last] every N events` (kind 'events', value N), `... every T`
    (kind 'time', value ms) or `output snapshot every T` (kind 'snapshot', value ms)."""

    kind: str
    value: int
    mode: str = "all"  # 'all' | 'first' | 'last'
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True)
class Query:
    """One `from ... select ... insert into ...;` with its annotations and source text.

    `text` is the query's exact source (annotations included, no trailing `;`)."""

    input: InputStream
    selector: Selector
    output: OutputAction
    rate: Optional[OutputRate] = None
    annotations: tuple[Annotation, ...] = ()
    text: str = field(default="", compare=False)
    span: Span = field(default=NO_SPAN, compare=False)

    @property
    def name(self) -> Optional[str]:
        """`@info(name='x')` (Siddhi 3/4) or `@name('x')`, else None."""
        info = find_annotation(self.annotations, "info")
        if info is not None and info.get("name"):
            return info.get("name")
        named = find_annotation(self.annotations, "name")
        return named.value if named is not None else None


@dataclass(frozen=True)
class ValuePartitionKey:
    """`expression of Stream` (a plain attribute in the usual case)."""

    stream_id: str
    expression: Expression
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True)
class RangeCondition:
    condition: Expression
    label: str
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True)
class RangePartitionKey:
    """`cond as 'label' or cond as 'label' ... of Stream`."""

    stream_id: str
    ranges: tuple[RangeCondition, ...]
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True)
class Partition:
    """`partition with (keys) begin queries end`; `text` is its exact source."""

    keys: tuple[Union[ValuePartitionKey, RangePartitionKey], ...]
    queries: tuple[Query, ...]
    annotations: tuple[Annotation, ...] = ()
    text: str = field(default="", compare=False)
    span: Span = field(default=NO_SPAN, compare=False)
    # definitions of the partition's inner `#streams`, inferred by the compiler
    inner_streams: tuple[StreamDefinition, ...] = ()

    def inner_stream(self, stream_id: str) -> Optional[StreamDefinition]:
        """The definition of inner stream `#stream_id`, or None."""
        for s in self.inner_streams:
            if s.id == stream_id:
                return s
        return None

    def key_for(self, stream_id: str) -> Optional[Union[ValuePartitionKey, RangePartitionKey]]:
        for k in self.keys:
            if k.stream_id == stream_id:
                return k
        return None


@dataclass(frozen=True)
class ExecutionPlan:
    """A compiled execution plan.

    `streams` holds the defined streams followed by the streams the compiler inferred from
    `insert into` targets that were not defined (their ids are in `inferred_streams`), so every
    stream the plan uses has a definition here. `elements` are the queries and partitions in
    source order."""

    annotations: tuple[Annotation, ...] = ()
    streams: tuple[StreamDefinition, ...] = ()
    tables: tuple[TableDefinition, ...] = ()
    triggers: tuple[TriggerDefinition, ...] = ()
    elements: tuple[Union[Query, Partition], ...] = ()
    inferred_streams: frozenset[str] = frozenset()
    windows: tuple[WindowDefinition, ...] = ()  # named windows
    source: str = field(default="", compare=False, repr=False)
    functions: tuple[FunctionDefinition, ...] = ()  # script functions; last: positional callers

    # -- lookups --
    def stream(self, stream_id: str) -> Optional[Union[StreamDefinition, TriggerDefinition]]:
        """The definition of stream (or trigger) `stream_id`, or None."""
        for s in self.streams:
            if s.id == stream_id:
                return s
        for t in self.triggers:
            if t.id == stream_id:
                return t
        return None

    def window(self, window_id: str) -> Optional[WindowDefinition]:
        """The definition of named window `window_id`, or None."""
        for w in self.windows:
            if w.id == window_id:
                return w
        return None

    def table(self, table_id: str) -> Optional[TableDefinition]:
        for t in self.tables:
            if t.id == table_id:
                return t
        return None

    @property
    def queries(self) -> tuple[Query, ...]:
        """Top-level queries (not those inside partitions)."""
        return tuple(e for e in self.elements if isinstance(e, Query))

    @property
    def partitions(self) -> tuple[Partition, ...]:
        return tuple(e for e in self.elements if isinstance(e, Partition))

    # -- plan annotations (`@Plan:x` in Siddhi 3, `@App:x` in Siddhi 4) --
    def plan_annotation(self, name: str) -> Optional[Annotation]:
        for a in self.annotations:
            if a.name.lower() == name.lower() and (a.namespace or "").lower() in ("plan", "app"):
                return a
        return None

    @property
    def name(self) -> Optional[str]:
        a = self.plan_annotation("name")
        return a.value if a is not None else None

    @property
    def description(self) -> Optional[str]:
        a = self.plan_annotation("description")
        return a.value if a is not None else None

    @property
    def playback(self) -> bool:
        return self.plan_annotation("playback") is not None

    @property
    def siddhi_mode(self) -> str:
        """`@Plan:siddhi('3.2')` (the default: exact Siddhi 3.2) or `@Plan:siddhi('fixed')`
        (the rules cep/engine/README.md lists as Siddhi bugs behave as users expect)."""
        a = self.plan_annotation("siddhi")
        return (a.value or "").strip().lower() if a is not None else SIDDHI_EXACT

    def plan_dist(self, key: str, default: int = 1) -> int:
        """`@Plan:dist(receiverParallelism='N', publisherParallelism='N')`: first one with key wins;
        0 means 1."""
        for a in self.annotations:
            if a.name.lower() == "dist" and (a.namespace or "").lower() in ("plan", "app"):
                v = a.get(key)
                if v is not None:
                    return max(1, int(v))
        return default
