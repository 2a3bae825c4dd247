"""Comparison logic of ../shared/conformance/run_cases.py, run in-process through the code path
of `cep run` (cep.cli.run.main) instead of a subprocess."""

import argparse
import io
import json
import math
import os

import yaml

CASES = os.path.join(os.path.dirname(__file__), "cases")


def case_files(kind):
    folder = os.path.join(CASES, kind)
    return sorted(f for f in os.listdir(folder) if f.endswith((".yaml", ".yml")))


def load_case(kind, name):
    with open(os.path.join(CASES, kind, name)) as f:
        return yaml.safe_load(f)


def same_value(got, want, tol):
    if isinstance(want, bool) or isinstance(got, bool):
        return got == want
    if isinstance(want, (int, float)) and isinstance(got, (int, float)):
        if want == got:
            return True
        if want != want and got != got:  # NaN equals NaN (run_cases.py's rule)
            return True
        if isinstance(want, float) or isinstance(got, float):
            return math.isclose(float(got), float(want), rel_tol=tol, abs_tol=tol)
        return False
    return got == want


def same_event(got, want, tol):
    gdata, wdata = got.get("data"), want.get("data")
    if not isinstance(gdata, list) or len(gdata) != len(wdata):
        return False
    if bool(got.get("expired", False)) != bool(want.get("expired", False)):
        return False
    if "timestamp" in want and got.get("timestamp") != want["timestamp"]:
        return False
    return all(same_value(g, w, tol) for g, w in zip(gdata, wdata))


def run_in_process(case, tmp_path):
    """-> (exit code, stdout text, stderr text) of `cep run` on the case."""
    from cep.cli.run import main

    plan_file, events_file = tmp_path / "plan.siddhiql", tmp_path / "events.jsonl"
    plan_file.write_text(case["plan"])
    events_file.write_text("".join(json.dumps(e) + "\n" for e in case.get("input", []) or []))
    args = argparse.Namespace(
        plan=str(plan_file),
        events=str(events_file),
        playback=True if case.get("playback", True) else None,
        on_error="skip",
    )
    out, err = io.StringIO(), io.StringIO()
    code = main(args, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def check_case(case, code, stdout, stderr):
    """None when the output matches the case, else the reason (run_cases.py's wording)."""
    tol = float(case.get("tolerance", 1e-6))
    if case.get("error"):
        if code == 0:
            return "expected the plan to be rejected with an error, but the runner exited 0"
        if str(case["error"]).lower() not in (stderr + stdout).lower():
            return f"error message does not mention {case['error']!r}: {stderr.strip()[:300]}"
        return None
    if code != 0:
        return f"runner exited {code}: {stderr.strip()[-400:]}"
    got = {}
    for line in stdout.splitlines():
        if line.strip().startswith("{"):
            event = json.loads(line)
            got.setdefault(event.get("stream"), []).append(event)
    for stream, wanted in (case.get("expect", {}) or {}).items():
        have = got.get(stream, [])
        if len(have) != len(wanted):
            return (
                f"{stream}: expected {len(wanted)} events, got {len(have)}: "
                f"{json.dumps([e.get('data') for e in have])[:300]}"
            )
        for i, (g, w) in enumerate(zip(have, wanted)):
            if not same_event(g, w, tol):
                return f"{stream}[{i}]: expected {json.dumps(w)}, got {json.dumps(g)}"
    return None
