"""The SiddhiQL compiler: plan text to a validated `cep.model.ExecutionPlan`.

    plan = cep.compiler.compile(text)   # raises a cep.errors.SiddhiQLError subclass

`parse(text)` builds the model without validation (syntax errors only)."""

from collections.abc import Callable
from typing import TypeVar

from cep.compiler.annotation_rules import require_plan_name
from cep.compiler.parser import parse_tree
from cep.compiler.transformer import to_model
from cep.compiler.types import expression_type
from cep.compiler.validator import validate
from cep.errors import InvalidQueryError, SiddhiQLError
from cep.model import ExecutionPlan, Span

__all__ = ["compile", "parse", "validate", "require_plan_name", "expression_type"]

T = TypeVar("T")


def parse(text: str) -> ExecutionPlan:
    """The unvalidated ExecutionPlan of `text`; raises SiddhiQLSyntaxError."""
    if not isinstance(text, str):
        raise TypeError(f"plan text must be a str, not {type(text).__name__}")
    plan: ExecutionPlan = _positioned(text, lambda: to_model(parse_tree(text), text))
    return plan


def compile(text: str) -> ExecutionPlan:  # noqa: A001 - Siddhi's name, shadowing the built-in
    """The validated ExecutionPlan of SiddhiQL `text`; raises a positioned SiddhiQLError."""
    plan = parse(text)
    valid: ExecutionPlan = _positioned(text, lambda: validate(plan))
    return valid


def _positioned(text: str, step: Callable[[], T]) -> T:
    """Run `step`; give its SiddhiQLError the plan text, and turn a too-deep expression into one."""
    try:
        return step()
    except SiddhiQLError as exc:
        if exc.text is None:
            exc.text = text
        raise
    except RecursionError:
        lines = text.splitlines() or [""]
        span = Span(1, 1, len(lines), len(lines[-1]) + 1, 0, len(text))
        raise InvalidQueryError(
            "the plan nests expressions too deeply to compile (hundreds of "
            "operators in one expression?)",
            span,
            text,
        ) from None
