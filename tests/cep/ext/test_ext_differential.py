"""Differential test of the stream-processor extensions against the real Siddhi 3.2.15
(../shared/siddhi-kit, or $SIDDHI_KIT): random event streams through kslack (with its timer),
the regressions, markov chains and the extrema processors; both engines' outputs must agree.
Without the kit the test is skipped: the suite needs nothing outside the repo."""

import json
import os
import random
import shutil
import subprocess

import pytest

from tests.conformance.conformance import check_case, run_in_process

KIT = os.environ.get("SIDDHI_KIT") or os.path.join(
    os.path.dirname(__file__), "..", "..", "..", "..", "..", "shared", "siddhi-kit"
)
RUN = os.path.join(KIT, "siddhi-run")
HAVE_KIT = os.path.exists(RUN) and shutil.which("java") is not None

DEFS = (
    "@Plan:playback\ndefine stream S (id string, st string, t long, y double, x double, "
    "z double);\n"
)
QUERIES = {
    "kslack": "from S#reorder:kslack(t, 700l) select id, t insert into Out;",
    "kslack-discard": "from S#reorder:kslack(t, 700l, 300l, true) select id, t insert into Out;",
    "regress": "from S#timeseries:regress(2, 30, 0.9, y, x) select * insert into Out;",
    "regress-multi": "from S#timeseries:regress(1, 40, 0.95, y, x, z) select * insert into Out;",
    "outlier": "from S#timeseries:outlier(1, 20, 0.95, 1.5, y, x) select * insert into Out;",
    "forecast": "from S#timeseries:forecast(1, 25, 0.95, x + 1, y, x) select * insert into Out;",
    "lt-regress": "from S#timeseries:lengthTimeRegress(2 sec, 15, y, x) select * insert into Out;",
    "lt-outlier": "from S#timeseries:lengthTimeOutlier(3 sec, 20, 2.0, y, x) select * insert "
    "into Out;",
    "markov": "from S#markov:markovChain(id, st, 60 min, 0.3, 4, y > 0) select id, st, "
    "lastState, transitionProbability, notify insert into Out;",
    "kalman-minmax": "from S#timeseries:kalmanMinMax(y, 0.000001, 0.0001, 30, 'minmax') "
    "select id, y, extremaType insert into Out;",
    "kernel-minmax": "from S#timeseries:kernelMinMax(y, 3, 15, 'minmax') select id, y, "
    "extremaType insert into Out;",
}


def _events(seed, n=160):
    rnd = random.Random(seed)
    out, ts, level = [], 1000, 50.0
    for i in range(n):
        ts += rnd.choice((10, 50, 100, 400))
        level += rnd.gauss(0, 3)
        x = float(i % 17) + rnd.random()
        out.append(
            {
                "stream": "S",
                "timestamp": ts,
                "data": [
                    rnd.choice("abc"),
                    rnd.choice(("s1", "s2", "s3")),
                    ts + rnd.randint(-600, 200),
                    round(level, 3),
                    round(x, 3),
                    round(rnd.uniform(-5, 5), 3),
                ],
            }
        )
        if rnd.random() < 0.05:
            ts += 1500
            out.append({"timestamp": ts})
    out.append({"timestamp": ts + 5000})
    return out


def _siddhi(plan, events, tmp_path):
    (tmp_path / "p.siddhiql").write_text(plan)
    (tmp_path / "e.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    done = subprocess.run(
        [RUN, str(tmp_path / "p.siddhiql"), str(tmp_path / "e.jsonl")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-500:]
    got = {}
    for line in done.stdout.splitlines():
        if line.startswith("{"):
            e = json.loads(line)
            got.setdefault(e["stream"], []).append({"timestamp": e["timestamp"], "data": e["data"]})
    return got


@pytest.mark.slow
@pytest.mark.skipif(
    not HAVE_KIT, reason="the Siddhi 3.2.15 kit (../shared/siddhi-kit) and java are not here"
)
@pytest.mark.parametrize("name", sorted(QUERIES))
def test_same_output_as_siddhi(name, tmp_path):
    plan = DEFS + QUERIES[name]
    events = _events(sum(map(ord, name)))
    expect = _siddhi(plan, events, tmp_path)
    assert expect.get("Out"), "the generator should make Siddhi emit something"
    case = {
        "plan": plan,
        "input": events,
        "expect": {"Out": expect.get("Out", [])},
        "tolerance": 1e-9,
    }
    code, out, err = run_in_process(case, tmp_path)
    problem = check_case(case, code, out, err)
    assert problem is None, f"{name}: {problem}"
