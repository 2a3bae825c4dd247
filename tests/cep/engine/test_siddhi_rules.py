"""Siddhi 3.2 rules that differential testing found (expressions, functions, aggregates, rate
limiting), each checked in query shapes other than the fuzz case that found it."""
import math
import warnings

import pytest

from tests.cep.engine.helpers import collect, feed, runtime


def run(plan, events, out="Out", batch=1):
    rt = runtime("@Plan:playback\n" + plan)
    got = collect(rt, [out])
    feed(rt, events, batch)
    rt.shutdown()
    return [row for _, row in got[out]]


# -- null logic: and/or/not are two-valued, `!=` with null is true --

def test_and_or_with_null_give_false_not_null_in_a_filter_and_a_projection():
    plan = ("define stream S (b bool, c bool);\n"
            "from S[not (b and c)] select b or c as o, b and c as a insert into Out;")
    rows = run(plan, [("S", 1, (None, None)), ("S", 2, (None, True)), ("S", 3, (False, None))])
    assert rows == [(False, False), (True, False), (False, False)]


def test_not_of_null_is_true():
    rows = run("define stream S (b bool);\nfrom S[not b] select not b as n insert into Out;",
               [("S", 1, (None,)), ("S", 2, (True,))])
    assert rows == [(True,)]


@pytest.mark.parametrize("batch", [1, 10])
def test_not_equal_with_null_is_true_and_other_comparisons_false(batch):
    plan = ("define stream S (s string, t string);\n"
            "from S select s != t as ne, s == t as eq insert into Out;")
    rows = run(plan, [("S", 1, (None, "x")), ("S", 2, ("x", None)), ("S", 3, (None, None)),
                      ("S", 4, ("x", "x"))], batch=batch)
    assert rows == [(True, False), (True, False), (True, False), (False, True)]


def test_not_equal_null_in_having_with_group_by():
    plan = ("define stream S (k string, i int);\n"
            "from S#window.lengthBatch(2) select k, max(i) as m group by k having m != 3 "
            "insert into Out;")
    rows = run(plan, [("S", 1, ("a", None)), ("S", 2, ("b", 3))])
    assert rows == [("a", None)]


def test_not_equal_null_in_a_join_condition():
    plan = ("define stream A (k string);\ndefine stream B (k string);\n"
            "from A#window.length(5) join B#window.length(5) on A.k != B.k "
            "select A.k as a, B.k as b insert into Out;")
    rows = run(plan, [("A", 1, (None,)), ("B", 2, ("x",))])
    assert rows == [(None, "x")]
