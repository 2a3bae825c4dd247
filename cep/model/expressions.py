"""Expressions: constants, attribute references, operators and function calls."""

from dataclasses import dataclass, field
from typing import ClassVar, Optional, Union

from cep.model.span import Span, NO_SPAN
from cep.model.types import AttrType


@dataclass(frozen=True)
class Expression:
    """Base of all expression nodes.

    The compiler stamps each node of a validated plan with what it resolved (`resolve()`):
    `rtype`, the node's AttrType, and for a call `entry`, its catalog key
    (`("function" | "aggregator", namespace, name)`, the name as `cep.catalog` files it). The engine builds
    from these instead of deriving them again; a hand-made, unvalidated model has None in
    both and the engine derives them itself. They are not fields: equality, hashing and
    repr ignore them, and pickling keeps them."""

    rtype: ClassVar[Optional[AttrType]] = None
    entry: ClassVar[Optional[tuple[str, Optional[str], str]]] = None

    def resolve(
        self, rtype: Optional[AttrType], entry: Optional[tuple[str, Optional[str], str]] = None
    ) -> None:
        """Record the resolved type (and catalog key); the compiler calls this once."""
        object.__setattr__(self, "rtype", rtype)
        if entry is not None:
            object.__setattr__(self, "entry", entry)


@dataclass(frozen=True)
class Constant(Expression):
    """A literal; `value` is a Python value of `type` (None for `null`, type OBJECT)."""

    value: object
    type: AttrType
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True)
class TimeConstant(Expression):
    """A time literal such as `10 sec` or `1 min 30 sec`, in milliseconds (a long)."""

    millis: int
    span: Span = field(default=NO_SPAN, compare=False)


# index of `e1[0]`, `e1[2]`, `e1[last]`, `e1[last-1]`: an int, or ("last", offset >= 0)
EventIndex = Union[int, tuple[str, int], None]


@dataclass(frozen=True)
class Variable(Expression):
    """An attribute reference: `price`, `S.price`, `e1.price`, `e1[0].price`, `e2[last].price`.

    `stream` is the stream id, alias or pattern state reference as written (None when bare);
    `inner` is True for `#Inner.attr` (partition inner streams)."""

    name: str
    stream: Optional[str] = None
    index: EventIndex = None
    inner: bool = False
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True)
class BinaryOp(Expression):
    """Arithmetic: op is one of + - * / %."""

    op: str
    left: Expression
    right: Expression
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True)
class CompareOp(Expression):
    """Comparison: op is one of == != < <= > >=."""

    op: str
    left: Expression
    right: Expression
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True)
class And(Expression):
    left: Expression
    right: Expression
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True)
class Or(Expression):
    left: Expression
    right: Expression
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True)
class Not(Expression):
    operand: Expression
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True)
class Negate(Expression):
    """Unary minus."""

    operand: Expression
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True)
class IsNull(Expression):
    """`expr is null`."""

    operand: Expression
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True)
class IsNullStream(Expression):
    """`e1 is null` / `e1[0] is null` on a pattern state reference (no such event matched)."""

    stream: str
    index: EventIndex = None
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True)
class FunctionCall(Expression):
    """`name(args)` or `ns:name(args)`; aggregators (sum, avg, ...) are function calls too."""

    name: str
    args: tuple[Expression, ...] = ()
    namespace: Optional[str] = None
    span: Span = field(default=NO_SPAN, compare=False)


@dataclass(frozen=True)
class InTable(Expression):
    """`condition in TableName`: true when some row of the table meets the condition."""

    condition: Expression
    table: str
    span: Span = field(default=NO_SPAN, compare=False)
