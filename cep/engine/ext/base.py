"""The base of namespaced stream processors (`#ns:name(...)`): a query-chain link that may hold
state and timers (the window machinery of cep.engine.windows.base) and appends attributes to the
events it lets through.

A subclass gives `signature(args, types, call)` (checks the parameters from their expressions
and types, raises positioned errors, returns the appended attributes as (name, AttrType)
pairs), and `parse(params)` (the setup arguments, from `ExtParams`)."""

from typing import List, Sequence, Tuple

from cep.engine.windows.base import WindowParams, WindowProcessor
from cep.errors import TypeMismatchError
from cep.model import AttrType, Constant, Negate, TimeConstant


class ExtParams(WindowParams):
    """The parameters of `#ns:name(...)`, with checks that name the processor."""

    def __init__(self, handler, scope):
        super().__init__(handler, scope)
        self.full = f"{handler.namespace}:{handler.name}"

    def _fail(self, i, why):
        span = self.params[i].span if i < len(self.params) else self.window.span
        raise TypeMismatchError(f"#{self.full}: parameter {i + 1} {why}", span)


def constant_value(expr):
    """The value of a constant parameter (time constants in ms, negated numbers), else a
    `NotConstant` marker."""
    if isinstance(expr, TimeConstant):
        return expr.millis
    if isinstance(expr, Constant):
        return expr.value
    if isinstance(expr, Negate):
        inner = constant_value(expr.operand)
        if isinstance(inner, (int, float)) and not isinstance(inner, bool):
            return -inner
    return NOT_CONSTANT


class _NotConstant:
    def __repr__(self):
        return "<not a constant>"


NOT_CONSTANT = _NotConstant()


def is_constant(expr) -> bool:
    return constant_value(expr) is not NOT_CONSTANT


def fail(call, index, message):
    """Raise a TypeMismatchError at parameter `index` of the `#ns:name(...)` handler `call`."""
    params = call.params
    span = params[index].span if index is not None and index < len(params) else call.span
    raise TypeMismatchError(f"#{call.namespace}:{call.name}: {message}", span)


class ExtStreamProcessor(WindowProcessor):
    """A namespaced stream processor. `extra` is how many attributes it appends."""

    extra = 0

    @classmethod
    def signature(
        cls, args: Sequence, types: Sequence[AttrType], call
    ) -> List[Tuple[str, AttrType]]:
        raise NotImplementedError

    @classmethod
    def build(cls, handler, scope, env):
        p = ExtParams(handler, scope)
        return cls(env, cls.parse(p))


class NotSupported(ExtStreamProcessor):
    """An extension this engine does not run yet: a positioned error, never a silent pass."""

    @classmethod
    def signature(cls, args, types, call):
        from cep.errors import InvalidQueryError

        raise InvalidQueryError(
            f"stream processor #{call.namespace}:{call.name} of Siddhi's "
            f"standard extensions is not supported by this engine yet",
            call.span,
        )
