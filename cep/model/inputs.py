"""Query inputs: single streams with handlers, joins, and pattern/sequence state machines."""

from dataclasses import dataclass, field
from typing import Optional, Union

from cep.model.expressions import Expression
from cep.model.span import Span, NO_SPAN


# --- stream handlers, applied in source order: S[filter]#window.x(...)#fn(...)[filter] ---


@dataclass(frozen=True)
class Filter:
    expression: Expression
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True)
class Window:
    """`#window.name(params)` or `#window.ns:name(params)`; params are expressions."""

    name: str
    params: tuple[Expression, ...] = ()
    namespace: Optional[str] = None
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True)
class StreamFunction:
    """`#name(params)` or `#ns:name(params)`: a stream processor function (not a window)."""

    name: str
    params: tuple[Expression, ...] = ()
    namespace: Optional[str] = None
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True)
class SingleInputStream:
    """`[#]StreamId[handlers...] [as alias]`; `inner` for `#Inner` streams of a partition.

    In a pattern or sequence, `alias` is the state reference (`e1` in `e1=S[...]`)."""

    stream_id: str
    handlers: tuple[Union[Filter, Window, StreamFunction], ...] = ()  # in source order
    alias: Optional[str] = None
    inner: bool = False
    span: Span = field(default=NO_SPAN, compare=False)

    @property
    def window(self) -> Optional[Window]:
        """The window handler, or None (a stream has at most one)."""
        for h in self.handlers:
            if isinstance(h, Window):
                return h
        return None

    @property
    def reference(self) -> str:
        """The name attributes are qualified with: the alias, else the stream id."""
        return self.alias or self.stream_id


@dataclass(frozen=True)
class JoinInputStream:
    """`left [unidirectional] JOIN_TYPE right [unidirectional] [on cond] [within T]`.

    join_type: 'inner' | 'left_outer' | 'right_outer' | 'full_outer';
    unidirectional: None | 'left' | 'right' (which side alone triggers output)."""

    left: SingleInputStream
    right: SingleInputStream
    join_type: str = "inner"
    on: Optional[Expression] = None
    unidirectional: Optional[str] = None
    within_millis: Optional[int] = None
    span: Span = field(default=NO_SPAN, compare=False)


# --- pattern (`->`) and sequence (`,`) state elements ---


@dataclass(frozen=True)
class StreamState:
    """One state: `e1=S[cond]` (the alias is `stream.alias`)."""

    stream: SingleInputStream
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True)
class NextState:
    """`first -> then` in a pattern, `first, then` in a sequence."""

    first: "StateElement"
    then: "StateElement"
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True)
class EveryState:
    """`every state` or `every (chain) [within T]`: restart matching after each match start."""

    inner: "StateElement"
    within_millis: Optional[int] = None
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True)
class LogicalState:
    """`A and B` / `A or B` (a side may be an AbsentState, `not A and B`)."""

    op: str
    left: "StateElement"
    right: "StateElement"
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True)
class CountState:
    """`e=S[c]<min:max>`; sequences' `+` is (1, None), `*` is (0, None), `?` is (0, 1)."""

    state: StreamState
    min_count: int
    max_count: Optional[int]  # None: unbounded
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True)
class AbsentState:
    """`not S[cond] for T` (Siddhi 4+ non-occurrence); `for_millis` None inside `not A and B`."""

    state: StreamState
    for_millis: Optional[int] = None
    span: Span = field(default=NO_SPAN, compare=False)


StateElement = Union[StreamState, NextState, EveryState, LogicalState, CountState, AbsentState]


@dataclass(frozen=True)
class StateInputStream:
    """A pattern (`kind='pattern'`) or sequence (`kind='sequence'`) input."""

    kind: str
    state: StateElement
    within_millis: Optional[int] = None
    span: Span = field(default=NO_SPAN, compare=False)


InputStream = Union[SingleInputStream, JoinInputStream, StateInputStream]
