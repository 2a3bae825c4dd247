"""The manager's side of the host policy (cep.policy) and of plan names.

`manager_policy(settings)` builds the HostPolicy from the manager's settings (file roots
default to <data_dir>/tenants/<id>/files). `check_compiled(compiled, tenant, policy)` and
`check_size(text, policy)` turn policy errors into PlanRejectedError with positions (400 on
the REST API). `check_plan_name(name)` is the rule for plan names in URLs and in @Plan:name."""

import re

from cep.policy import HostPolicy, PlanPolicyError, check_plan, check_plan_size
from manager.exceptions import BadPlanNameError, PlanRejectedError

NAME_RE = re.compile(r"[A-Za-z][A-Za-z0-9_.\-]{0,99}")
NAME_RULE = (
    "1 to 100 letters, digits, '_', '.' or '-', starting with a letter (no "
    "whitespace; a name like '-rf' would read as a command-line flag)"
)


def manager_policy(settings):
    from manager.settings import data_dir

    policy = HostPolicy.from_settings(settings, data_dir(settings)).with_reserved(
        settings["http.port"], settings["registry.port"]
    )
    policy.apply_script_limits()  # plans tried in the console follow the script settings
    return policy


def plan_name_problem(name):
    """Why `name` cannot be a plan name, or None when it can."""
    if not isinstance(name, str) or not NAME_RE.fullmatch(name) or name in (".", ".."):
        shown = name if isinstance(name, str) and len(name) <= 40 else f"{str(name)[:40]}..."
        length = f" ({len(name)} characters)" if isinstance(name, str) and len(name) > 100 else ""
        return f"execution plan name {shown!r}{length} must be {NAME_RULE}"
    return None


def check_plan_name(name):
    """The name, or BadPlanNameError (400) naming the rule."""
    problem = plan_name_problem(name)
    if problem:
        raise BadPlanNameError(problem)
    return name


def check_size(text, policy):
    if isinstance(text, str):
        try:
            check_plan_size(text, policy)
        except PlanPolicyError as exc:
            raise PlanRejectedError(exc.message, [exc.to_dict()]) from None


def check_compiled(compiled, tenant, policy):
    """PlanRejectedError (positioned) when the compiled plan's name or sinks, sources or
    limits break the rules for `tenant`."""
    problem = plan_name_problem(compiled.name)
    if problem:
        span = compiled.model.plan_annotation("name").span
        where = span.to_dict() if span.line else {}
        raise PlanRejectedError(
            problem, [{"error": "AnnotationError", "message": problem, **where}]
        )
    try:
        check_plan(compiled.model, policy, tenant)
    except PlanPolicyError as exc:
        exc.text = exc.text or compiled.text
        d = exc.to_dict()
        snippet = exc.snippet()
        if snippet:
            d["snippet"] = snippet
        raise PlanRejectedError(exc.message, [d]) from None
