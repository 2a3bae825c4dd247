"""Definitions: streams, tables and triggers."""

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Optional

from cep.model.span import Span, NO_SPAN
from cep.model.annotations import Annotation
from cep.model.types import AttrType

if TYPE_CHECKING:
    from cep.model.inputs import Window


@dataclass(frozen=True)
class Attribute:
    name: str
    type: AttrType
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True)
class StreamDefinition:
    """`define stream Id (a type, ...)`; `text` is the statement's source (without the `;`)."""

    id: str
    attributes: tuple[Attribute, ...]
    annotations: tuple[Annotation, ...] = ()
    text: str = field(default="", compare=False)
    span: Span = field(default=NO_SPAN, compare=False)

    @property
    def attribute_names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.attributes)

    def index_of(self, name: str) -> int:
        """Position of attribute `name`, or -1."""
        for i, a in enumerate(self.attributes):
            if a.name == name:
                return i
        return -1


@dataclass(frozen=True)
class TableDefinition(StreamDefinition):
    """`define table Id (a type, ...)`, with `@IndexBy('a')` / `@PrimaryKey('a')` in annotations."""


@dataclass(frozen=True)
class WindowDefinition(StreamDefinition):
    """`define window Id (a type, ...) length(10) [output all|current|expired events]`: a
    named window (Siddhi 3.2). Queries insert into it like a stream; its readers (queries,
    joins, patterns) share the one window and see what it emits, of `output_event_type`
    ('all', the default, 'current' or 'expired'); a join looks into its contents."""

    window: Optional["Window"] = None  # the window function and its parameters
    output_event_type: str = "all"


@dataclass(frozen=True)
class TriggerDefinition:
    """`define trigger Id at 'start' | every 5 sec | 'cron expression'`.

    Exactly one of `at_start`, `every_millis` and `cron` is set. The trigger is a stream with one
    attribute `triggered_time long`."""

    id: str
    at_start: bool = False
    every_millis: Optional[int] = None
    cron: Optional[str] = None
    annotations: tuple[Annotation, ...] = ()
    text: str = field(default="", compare=False)
    span: Span = field(default=NO_SPAN, compare=False)

    @property
    def attributes(self) -> tuple[Attribute, ...]:
        return (Attribute("triggered_time", AttrType.LONG),)


@dataclass(frozen=True)
class FunctionDefinition:
    """`define function Id[language] return type { body }`: a script function, called as
    `Id(args)`; the body reads its arguments as `data[0]`, `data[1]`, ..."""

    id: str
    language: str  # as written: JavaScript, python, Scala, R
    return_type: AttrType
    body: str  # the text between the braces
    annotations: tuple[Annotation, ...] = ()
    text: str = field(default="", compare=False)
    span: Span = field(default=NO_SPAN, compare=False)
    language_span: Span = field(default=NO_SPAN, compare=False)
