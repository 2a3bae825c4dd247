"""Record a conformance case from the real Siddhi 3.2.15 (the kit in ../shared/siddhi-kit):
run PLAN over EVENTS with `siddhi-run` and write the case YAML (plan, input, the kit's output
for the named streams) in the format of tests/conformance/cases/. A tool, not a test: the
suite reads the recorded files and never needs the kit.

    python -m tests.conformance.record_case NAME "DESCRIPTION" PLAN EVENTS.jsonl OUT[,OUT2] DIR
"""

import json
import os
import subprocess
import sys

import yaml

KIT = os.environ.get("SIDDHI_KIT", "/work/shared/siddhi-kit/siddhi-run")


def _flow(items):
    return "[" + ", ".join(json.dumps(x) for x in items) + "]"


def record(
    name: str, description: str, plan: str, events_file: str, streams: list, folder: str
) -> str:
    """Write `folder/name.yaml` from the kit's output; returns its path."""
    with open(plan) as f:
        plan_text = f.read()
    run = subprocess.run(
        [KIT, plan, events_file, "--streams", ",".join(streams)],
        capture_output=True,
        text=True,
        check=False,
    )
    if run.returncode != 0:
        raise SystemExit(f"siddhi-run exited {run.returncode}: {run.stderr.strip()}")
    got = {s: [] for s in streams}
    for line in run.stdout.splitlines():
        if line.startswith("{"):
            e = json.loads(line)
            got[e["stream"]].append(e)
    inputs = [json.loads(x) for x in open(events_file) if x.strip().startswith("{")]
    lines = (
        [f"name: {name}", f"description: {json.dumps(description)}", "siddhi: 3.2.15", "plan: |"]
        + ["  " + x for x in plan_text.rstrip("\n").split("\n")]
        + ["input:"]
    )
    for e in inputs:
        parts = (
            ([f"stream: {e['stream']}"] if "stream" in e else [])
            + [f"timestamp: {e['timestamp']}"]
            + ([f"data: {_flow(e['data'])}"] if "data" in e else [])
        )
        lines.append("  - {" + ", ".join(parts) + "}")
    lines.append("expect:")
    for s in streams:
        if not got[s]:
            lines.append(f"  {s}: []")
            continue
        lines.append(f"  {s}:")
        for e in got[s]:
            lines.append(f"    - {{timestamp: {e['timestamp']}, data: {_flow(e['data'])}}}")
    text = "\n".join(lines) + "\n"
    yaml.safe_load(text)  # the case must read back
    path = os.path.join(folder, name + ".yaml")
    with open(path, "w") as f:
        f.write(text)
    return path


if __name__ == "__main__":
    n, d, p, ev, outs, folder = sys.argv[1:7]
    print(record(n, d, p, ev, outs.split(","), folder))
