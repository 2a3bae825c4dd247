"""REST API /api/v1: backtests of a stored plan.

POST .../plans/<name>/backtest with {"inputs": {"Stream": "path", ...}, "output": "dir",
"format": "parquet"|"jsonl"|"csv", "timestamp_column": "timestamp"} starts `cep backtest`
in a child process (its own Spark JVM, local[N]) and answers 202 with the job's id; GET
.../backtest/<id> gives its state (running, done, failed), the summary when done, the error
when failed. Every path must lie under the tenant's file roots (cep/policy's rules, the same
as file sinks); responses name paths only as the request gave them."""

import json
import os
import subprocess
import sys
import tempfile
import threading
import uuid

from flask import Blueprint, abort, current_app, jsonify, request

from cep.policy import confine
from cep.policy.exceptions import PolicyViolation
from manager.store.base import parse_tenant

bp = Blueprint("api_backtest", __name__, url_prefix="/api/v1")
FORMATS = ("parquet", "jsonl", "csv")
HIDDEN_SUMMARY_KEYS = ("output", "spark_master")
_LOCK = threading.Lock()


def _jobs():
    return current_app.extensions.setdefault("backtests", {})


@bp.post("/tenants/<tenant>/plans/<name>/backtest")
def start_backtest(tenant, name):
    manager = current_app.config["MANAGER"]
    text = manager.plans.show(tenant, name)["text"]  # 404 for an unknown plan
    body = request.get_json(silent=True)
    inputs, output, fmt, ts_column = _parse_body(body)
    roots = manager.plans.policy.file_roots_for(parse_tenant(tenant))
    given = {}
    try:
        real_inputs = {sid: confine(path, roots) for sid, path in inputs.items()}
        real_output = confine(output, roots)
    except PolicyViolation as exc:
        abort(400, description=str(exc))
    given.update({real: path for real, path in zip(real_inputs.values(), inputs.values())})
    given[real_output] = output
    tenant_id = parse_tenant(tenant)
    with _LOCK:  # one tenant's backtests (each a Spark JVM) within its quota
        running = sum(
            1 for j in _jobs().values() if j["tenant"] == str(tenant_id) and j["state"] == "running"
        )
        manager.quotas.check_backtests(tenant_id, running)
        job = {
            "id": uuid.uuid4().hex[:16],
            "tenant": str(tenant_id),
            "plan": name,
            "state": "running",
        }
        _jobs()[job["id"]] = job
    cmd = [
        sys.executable,
        "-m",
        "cep.cli.main",
        "backtest",
        "PLAN",
        "--output",
        real_output,
        "--format",
        fmt,
        "--timestamp-column",
        ts_column,
        "--tenant",
        job["tenant"],
        "--json",
        "--no-progress",
        "--overwrite",
    ]
    for sid, real in real_inputs.items():
        cmd += ["--input", f"{sid}={real}"]
    threading.Thread(
        target=_run, args=(job, cmd, text, given), daemon=True, name=f"backtest-{job['id']}"
    ).start()
    return jsonify({"id": job["id"], "state": "running"}), 202


@bp.get("/tenants/<tenant>/plans/<name>/backtest/<job_id>")
def backtest_status(tenant, name, job_id):
    job = _jobs().get(job_id)
    if job is None or job["tenant"] != str(parse_tenant(tenant)) or job["plan"] != name:
        abort(404, description=f"no backtest {job_id!r} of plan {name!r}")
    return jsonify({k: v for k, v in job.items() if k != "tenant"})


def _parse_body(body):
    if not isinstance(body, dict):
        abort(
            400,
            description='the body must be JSON: {"inputs": {"Stream": "path"}, "output": "dir"}',
        )
    inputs, output = body.get("inputs"), body.get("output")
    if (
        not isinstance(inputs, dict)
        or not inputs
        or not all(isinstance(k, str) and isinstance(v, str) for k, v in inputs.items())
    ):
        abort(400, description='"inputs" must map stream ids to dataset paths')
    if not isinstance(output, str):
        abort(400, description='"output" must be a directory path')
    fmt = body.get("format", "parquet")
    if fmt not in FORMATS:
        abort(400, description=f'"format" must be one of {", ".join(FORMATS)}')
    ts_column = body.get("timestamp_column", "timestamp")
    if not isinstance(ts_column, str) or not ts_column:
        abort(400, description='"timestamp_column" must be a column name')
    return inputs, output, fmt, ts_column


def _run(job, cmd, text, given):
    """The child process's outcome into `job` (paths shown as the request gave them)."""
    with tempfile.TemporaryDirectory(prefix="cep-backtest-api-") as tmp:
        plan_file = os.path.join(tmp, "plan.siddhiql")
        with open(plan_file, "w", encoding="utf-8") as f:
            f.write(text)
        cmd = [plan_file if c == "PLAN" else c for c in cmd]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, cwd=_project_root())
        except OSError as exc:
            job.update(state="failed", error=f"could not start cep backtest: {exc.strerror}")
            return
    if proc.returncode == 0:
        summary = json.loads(proc.stdout)
        job.update(
            state="done", summary={k: v for k, v in summary.items() if k not in HIDDEN_SUMMARY_KEYS}
        )
        return
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("cep backtest: ")]
    message = lines[-1][len("cep backtest: ") :] if lines else "the backtest failed"
    for real, shown in sorted(given.items(), key=lambda kv: -len(kv[0])):
        message = message.replace(real, shown)
    job.update(state="failed", error=message.replace(plan_file, "plan"))


def _project_root():
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
