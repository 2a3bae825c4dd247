"""Validate a plan as `plan add` would, changing nothing: the compiler's positioned errors and
the distributed-mode / query-plan checks (and the host policy when the plan service has one),
as the editor's `POST /api/v1/validate` answers them."""

import re

from manager.compiler import compile_plan
from manager.exceptions import PlanRejectedError

POSITION = ("line", "column", "endLine", "endColumn")
NAME = re.compile(r"""@\s*Plan\s*:\s*name\s*\(\s*(['"])(.*?)\1\s*\)""", re.IGNORECASE)


def _error(e):
    out = {"error": e.get("error", "PlanRejectedError"), "message": e.get("message", "")}
    for key in POSITION:
        out[key] = e.get(key)
    if e.get("snippet"):
        out["snippet"] = e["snippet"]
    return out


def plan_name(text):
    """The @Plan:name of a text that may not compile (None when there is none)."""
    m = NAME.search(text or "")
    return m.group(2) if m else None


def validate_plan(plans, tenant, text):
    """{"valid", "name", "errors": [{error, message, line, column, endLine, endColumn}]}."""
    checker = getattr(plans, "validate", None)
    try:
        if checker is not None:  # the plan service's own check: compiler, rules, host policy
            result = checker(tenant, text)
            name = result.get("name") if isinstance(result, dict) else plan_name(text)
        else:
            name = compile_plan(text, plans.compiler).name
    except PlanRejectedError as exc:
        errors = [_error(e) for e in exc.errors] or [_error(exc.to_dict())]
        return {"valid": False, "name": plan_name(text), "errors": errors}
    return {"valid": True, "name": name, "errors": []}
