"""`@Plan:siddhi('fixed')` and stddev (issue 12): Siddhi 3.2's running sum of squares can drift
just below zero and Math.sqrt gives NaN where the true deviation is 0; 'fixed' gives 0, the
default and '3.2' keep NaN. Tested in a plain, a grouped, a partitioned and a joined query."""

import math

import pytest

import cep

VALUES = (1.1, 0.2, 0.7, 0.7, 1.1)  # the window (0.7, 0.7) has deviation 0
QUERIES = {
    "plain": "from S#window.length(2) select k, stddev(d) as sd insert into Out;",
    "grouped": "from S#window.length(2) select k, stddev(d) as sd group by k insert into Out;",
    "partitioned": "partition with (k of S) begin from S#window.length(2) "
    "select k, stddev(d) as sd insert into Out; end;",
    "joined": "from S#window.length(2) join T#window.length(1) on S.k == T.k "
    "select S.k as k, stddev(S.d) as sd insert into Out;",
}


def deviations(mode, query):
    head = "" if mode == "default" else f"@Plan:siddhi('{mode}')\n"
    plan = cep.compile(
        head + "@Plan:playback\ndefine stream S (k int, d double);\n"
        "define stream T (k int);\n" + query
    )
    rt, got = cep.ExecutionPlanRuntime(plan), []
    rt.add_callback("Out", lambda events: got.extend(row[-1] for _, row in events))
    if "join" in query:
        rt.input_handler("T").send((1,), 0)
    for i, v in enumerate(VALUES):
        rt.input_handler("S").send((1, v), (i + 1) * 1000)
    rt.shutdown()
    return got


@pytest.mark.parametrize("shape", sorted(QUERIES))
def test_stddev_drift_is_nan_in_3_2_and_zero_when_fixed(shape):
    for mode in ("default", "3.2"):
        sd = deviations(mode, QUERIES[shape])
        assert math.isnan(sd[3]) and sd[4] == pytest.approx(0.2), (mode, sd)
    fixed = deviations("fixed", QUERIES[shape])
    assert fixed[3] == 0.0 and fixed[4] == pytest.approx(0.2)
    assert fixed[:3] == pytest.approx([0.0, 0.45, 0.25])
