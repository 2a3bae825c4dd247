""" "Try it": a plan over JSON-lines events, run in-process by the engine in playback mode with
`cep run`'s own code (cep.engine.offline.run), so the output is what `cep run --playback`
prints. A line may carry `delay` (ms) instead of `timestamp`: its timestamp is the previous
event's plus the delay."""

import json

from cep.errors import CepError, SiddhiQLError
from manager.web.console.exceptions import BadConsoleRequestError

MAX_LINES = 100_000
MAX_OUTPUTS = 10_000


def positioned(exc):
    """The compiler's errors of `exc` as dicts with message and position."""
    out = []
    for e in getattr(exc, "errors", None) or [exc]:
        d = e.to_dict() if hasattr(e, "to_dict") else {"error": type(e).__name__, "message": str(e)}
        if d.get("error") == "SyntaxError_":
            d["error"] = "SiddhiQLSyntaxError"
        out.append(d)
    return out


def apply_delays(lines):
    """Lines with `delay` and no `timestamp` get the previous timestamp + delay; the rest are
    passed through unchanged (bad lines are left for the runner to report)."""
    out, last = [], None
    for text in lines:
        try:
            obj = json.loads(text) if text.strip() else None
        except json.JSONDecodeError:
            obj = None
        if isinstance(obj, dict):
            if isinstance(obj.get("timestamp"), int):
                last = obj["timestamp"]
            elif isinstance(obj.get("delay"), (int, float)) and not isinstance(obj["delay"], bool):
                last = (last or 0) + int(obj.pop("delay"))
                obj["timestamp"] = last
                text = json.dumps(obj)
        out.append(text)
    return out


def try_plan(text, events_text, policy=None):
    """{"outputs": {stream: [{timestamp, data}]}, "events": [cep run's lines as dicts],
    "badLines": [{line, reason}], "errors": [...], "truncated": bool}. `policy` (the
    manager's cep.policy.HostPolicy) bounds the plan's size and windows."""
    import cep
    from cep.engine.offline import run

    if not isinstance(text, str) or not text.strip():
        raise BadConsoleRequestError("the plan is empty")
    lines = (events_text or "").splitlines()
    if len(lines) > MAX_LINES:
        raise BadConsoleRequestError(f"at most {MAX_LINES} event lines, got {len(lines)}")
    result = {"outputs": {}, "events": [], "badLines": [], "errors": [], "truncated": False}
    try:
        plan = cep.compile(text)
        if policy is not None:
            from cep.policy.plan_check import check_limits

            check_limits(plan, policy)
        from cep.policy.plan_check import check_no_stores

        check_no_stores(plan)  # a try-it run never opens the databases of database tables
    except SiddhiQLError as exc:
        result["errors"] = positioned(exc)
        return result

    def emit(event):
        if len(result["events"]) >= MAX_OUTPUTS:
            result["truncated"] = True
            return
        result["events"].append(event)
        result["outputs"].setdefault(event["stream"], []).append(
            {"timestamp": event["timestamp"], "data": event["data"]}
        )

    def on_bad(bad):
        result["badLines"].append({"line": bad.line, "reason": bad.reason})

    try:
        run(plan, apply_delays(lines), emit, on_bad, playback=True)
    except CepError as exc:
        result["errors"] = positioned(exc)
    return result
