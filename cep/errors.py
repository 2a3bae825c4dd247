"""Errors of the SiddhiQL compiler and engine, under one root type.

Compile errors carry the span of the offending text (line and column of its start and end) and
render a caret snippet, as Siddhi's editor users expect."""

from typing import TYPE_CHECKING, Any, Iterable

if TYPE_CHECKING:
    from cep.model.span import Span


class CepError(Exception):
    """Root of every error raised by the cep package."""


class SiddhiQLError(CepError):
    """A plan was rejected at compile time; knows where in the text and why."""

    def __init__(self, message: str, span: "Span | None" = None, text: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.span = span
        self.text = text  # the whole plan text, for the snippet

    @property
    def line(self) -> int:
        return self.span.line if self.span else 0

    @property
    def column(self) -> int:
        return self.span.column if self.span else 0

    def snippet(self) -> str:
        """The offending source line with a caret row under the offending text."""
        if not self.span or not self.text or self.span.line <= 0:
            return ""
        lines = self.text.splitlines()
        if self.span.line > len(lines):
            return ""
        src = lines[self.span.line - 1]
        start = max(self.span.column - 1, 0)
        if self.span.end_line == self.span.line and self.span.end_column > self.span.column:
            width = self.span.end_column - self.span.column
        else:
            width = max(len(src) - start, 1)
        return f"{src}\n{' ' * start}{'^' * width}"

    def to_dict(self) -> dict[str, Any]:
        """JSON form for the REST API: message, kind and position."""
        d: dict[str, Any] = {"error": type(self).__name__, "message": self.message}
        if self.span:
            d.update(self.span.to_dict())
        return d

    def __str__(self) -> str:
        where = f"line {self.span.line}, column {self.span.column}: " if self.span else ""
        snip = self.snippet()
        return f"{where}{self.message}" + (f"\n{snip}" if snip else "")


class SyntaxError_(SiddhiQLError):
    """The text does not follow SiddhiQL's grammar."""


# SiddhiQL syntax errors are exported under a name that does not shadow the builtin.
SiddhiQLSyntaxError = SyntaxError_


class UnknownStreamError(SiddhiQLError):
    """A query reads from (or a partition names) a stream, table or alias that is not defined."""


class UnknownAttributeError(SiddhiQLError):
    """An expression names an attribute its input does not have."""


class UnknownFunctionError(SiddhiQLError):
    """A function, aggregator or stream function is not known."""


class UnknownWindowError(SiddhiQLError):
    """A window type is not known."""


class TypeMismatchError(SiddhiQLError):
    """An expression, parameter or output does not have the type it needs."""


class DuplicateDefinitionError(SiddhiQLError):
    """A stream, table, trigger or query name is defined twice, or two definitions conflict."""


class AnnotationError(SiddhiQLError):
    """An annotation (`@Plan:name`, `@Import`, `@dist`, ...) is missing, malformed or misplaced."""


class InvalidQueryError(SiddhiQLError):
    """A query is well-formed but not meaningful (a table as a stream input, a bad pattern, ...)."""


class EngineError(CepError):
    """A runtime failure of the engine."""


class EventError(EngineError):
    """One input event does not fit its stream (arity, type); the reason names the attribute."""


class EventFailure(EngineError):
    """Processing one event failed in a query (a script function threw or ran past a cap):
    the junction drops that event for that query, logs and counts it, and goes on."""


class UnknownInputStreamError(EngineError):
    """Events were sent to a stream the plan does not have."""


class SnapshotError(EngineError):
    """A snapshot cannot be restored (corrupt, other format version, or another plan)."""


def attribute_list(pairs: Iterable[tuple[str, Any]]) -> str:
    """'attributes and types: a string, b long' of (name, type) pairs, or 'no attributes':
    what an unknown-attribute error says the stream or scope has."""
    text = ", ".join(f"{n} {t}" for n, t in pairs)
    return f"attributes and types: {text}" if text else "no attributes"
