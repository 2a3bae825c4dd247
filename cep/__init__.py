"""SiddhiQL compiler and engine."""

__version__ = "0.1.0"

from cep.compiler import compile, parse, require_plan_name  # noqa: E402,F401
from cep.errors import CepError, SiddhiQLError, SiddhiQLSyntaxError  # noqa: E402,F401
from cep.model import ExecutionPlan  # noqa: E402,F401
from cep.engine.runtime import ExecutionPlanRuntime  # noqa: E402,F401

__all__ = [
    "compile",
    "parse",
    "require_plan_name",
    "CepError",
    "SiddhiQLError",
    "SiddhiQLSyntaxError",
    "ExecutionPlan",
    "ExecutionPlanRuntime",
]
