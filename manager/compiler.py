"""Compile and check a plan for distributed mode: SiddhiQL errors and distribution errors come
back as PlanRejectedError with positions (line, column, endLine, endColumn)."""

import re
from dataclasses import dataclass
from typing import Any

from cep.errors import SiddhiQLError
from cep.model.queries import ExecutionPlan
from manager.exceptions import PlanRejectedError, QueryPlanError
from manager.queryplan import query_plan_xml


@dataclass(frozen=True)
class CompiledPlan:
    """A plan that passed every check: its name, model, XML query plan and text."""

    name: str
    model: ExecutionPlan
    xml: str
    text: str


def default_compiler(text):
    import cep

    if not hasattr(cep, "compile"):
        raise PlanRejectedError("the SiddhiQL compiler (cep.compile) is not available")
    return cep.compile(text)


def _rejected(exc):
    d = exc.to_dict()
    if d.get("error") == "SyntaxError_":  # the compiler's class, under its exported name
        d["error"] = "SiddhiQLSyntaxError"
    if isinstance(exc, SiddhiQLError):
        snippet = exc.snippet()
        if snippet:
            d["snippet"] = snippet
    return d


def compile_plan(text: str, compiler: Any = None) -> CompiledPlan:
    """CompiledPlan, or PlanRejectedError naming every problem found and where it is."""
    if not isinstance(text, str) or not text.strip():
        raise PlanRejectedError("the execution plan is empty")
    try:
        model = (compiler or default_compiler)(text)
    except SiddhiQLError as exc:
        errors = [_rejected(e) for e in getattr(exc, "errors", None) or [exc]]
        raise PlanRejectedError(f"SiddhiQL error: {errors[0]['message']}", errors) from None
    _check_name(model)
    try:
        xml = query_plan_xml(model)
    except QueryPlanError as exc:
        raise PlanRejectedError(str(exc), [exc.to_dict()]) from None
    return CompiledPlan(model.name, model, xml, text)


def _check_name(model):
    """@Plan:name is mandatory and becomes a file and topology name: no whitespace."""
    name = model.name
    if not name:
        where = {"line": 1, "column": 1, "endLine": 1, "endColumn": 1}
        raise PlanRejectedError(
            "@Plan:name('...') is mandatory",
            [{"error": "AnnotationError", "message": "@Plan:name('...') is mandatory", **where}],
        )
    if not re.match(r"^[A-Za-z0-9_.\-]+$", name):
        message = (
            f"Execution plan name '{name}' contains whitespaces or characters other "
            f"than letters, digits, '_', '.', '-'"
        )
        span = model.plan_annotation("name").span
        where = span.to_dict() if span.line else {}
        raise PlanRejectedError(
            message, [{"error": "AnnotationError", "message": message, **where}]
        )
