"""`@Plan:siddhi('3.2' | 'fixed')` (issue 12): the default and '3.2' are exact Siddhi 3.2; 'fixed'
gives the sane behaviour for the rules cep/engine/README.md calls plain Siddhi bugs. Each rule
is tested in both modes (and the default), in patterns, partitions and after a snapshot."""

import pickle

import pytest

from cep.compiler import compile as compile_plan
from cep.engine.runtime import ExecutionPlanRuntime
from cep.errors import AnnotationError

BASE = """@Plan:playback
define stream A (id int);
define stream B (id int);
define stream C (id int);
"""
MODES = {"default": "", "3.2": "@Plan:siddhi('3.2')\n", "fixed": "@Plan:siddhi('fixed')\n"}


def rows(mode, query, events, restore_after=None):
    """events: (stream, id) at ts 100, 200, ...; with restore_after=k the runtime is
    snapshotted after k events and a fresh one restored from it takes the rest."""
    plan = compile_plan(MODES[mode] + BASE + query)
    rt, got = ExecutionPlanRuntime(plan), []
    rt.add_callback("Out", got.extend)
    for k, (sid, i) in enumerate(events):
        if k == restore_after:
            state = pickle.loads(pickle.dumps(rt.snapshot()))
            rt.shutdown()
            rt = ExecutionPlanRuntime(plan)
            rt.add_callback("Out", got.extend)
            rt.restore(state)
        rt.input_handler(sid).send((i,), (k + 1) * 100)
    rt.shutdown()
    return [row for _, row in got]


EVERY_COUNT = (
    "from every e1=A<2> -> e2=B select e1[0].id as a0, e1[last].id as al, "
    "e2.id as b insert into Out;"
)
EVENTS_EVERY = [
    ("A", 1),
    ("A", 2),
    ("B", 10),
    ("A", 3),
    ("A", 4),
    ("B", 20),
    ("A", 5),
    ("A", 6),
    ("B", 30),
]


@pytest.mark.parametrize("mode", ["default", "3.2"])
def test_every_count_matches_once_ever_in_3_2(mode):
    assert rows(mode, EVERY_COUNT, EVENTS_EVERY) == [(1, 2, 10)]


def test_every_count_matches_each_completed_count_when_fixed():
    assert rows("fixed", EVERY_COUNT, EVENTS_EVERY) == [(1, 2, 10), (3, 4, 20), (5, 6, 30)]
    # a snapshot between the matches keeps each restart's own list
    assert rows("fixed", EVERY_COUNT, EVENTS_EVERY, restore_after=4) == [
        (1, 2, 10),
        (3, 4, 20),
        (5, 6, 30),
    ]


def test_every_count_keeps_its_own_list_when_fixed():
    """3.2's shared list lets later As extend the match (e1[last] = A3); fixed does not."""
    events = [("A", 1), ("A", 2), ("A", 3), ("B", 10)]
    assert rows("3.2", EVERY_COUNT, events) == [(1, 3, 10)]
    assert rows("fixed", EVERY_COUNT, events) == [(1, 2, 10)]


OR_START = "from e1=A or e2=B -> e3=C select e1.id as a, e2.id as b, e3.id as c insert into Out;"
AND_START = "from e1=A and e2=B -> e3=C select e1.id as a, e2.id as b, e3.id as c insert into Out;"


@pytest.mark.parametrize(
    "query, events, row",
    [
        (OR_START, [("B", 2), ("C", 3)], (None, 2, 3)),
        (AND_START, [("A", 1), ("B", 2), ("C", 3)], (1, 2, 3)),
    ],
)
def test_a_logical_start_emits_twice_in_3_2_and_once_when_fixed(query, events, row):
    assert rows("default", query, events) == [row, row]
    assert rows("3.2", query, events) == [row, row]
    assert rows("fixed", query, events) == [row]


def test_a_partitioned_logical_start_emits_once_when_fixed():
    query = (
        "partition with (id of A, id of B, id of C) begin "
        "from every (e1=A or e2=B) -> e3=C select e1.id as a, e2.id as b, e3.id as c "
        "insert into Out; end;"
    )
    events = [("A", 1), ("B", 2), ("C", 1), ("C", 2)]
    assert rows("3.2", query, events) == [(1, None, 1), (1, None, 1), (None, 2, 2), (None, 2, 2)]
    assert rows("fixed", query, events) == [(1, None, 1), (None, 2, 2)]


SEQ_PLUS = "from e1=A, e2=B+ select e1.id as a, e2[0].id as b0, e2[last].id as bl insert into Out;"
SEQ_TWO = "from e1=A, e2=B<2> select e1.id as a, e2[0].id as b0, e2[last].id as bl insert into Out;"
SEQ_RANGE = (
    "from e1=A, e2=B<2:3> select e1.id as a, e2[0].id as b0, e2[last].id as bl insert into Out;"
)


@pytest.mark.parametrize(
    "query, events, fixed",
    [
        (
            SEQ_PLUS,
            [("A", 1), ("B", 2), ("B", 3), ("C", 0), ("A", 4), ("B", 5)],
            [(1, 2, 2), (4, 5, 5)],
        ),
        (SEQ_TWO, [("A", 1), ("B", 2), ("B", 3), ("B", 4)], [(1, 2, 3)]),
        (SEQ_RANGE, [("A", 1), ("B", 2), ("B", 3), ("B", 4), ("B", 5)], [(1, 2, 3)]),
    ],
)
def test_a_sequence_ending_in_a_count_emits_only_when_fixed(query, events, fixed):
    assert rows("default", query, events) == []
    assert rows("3.2", query, events) == []
    assert rows("fixed", query, events) == fixed


def test_rules_that_are_not_bugs_are_the_same_in_both_modes():
    """A trailing `B<0:1>` completes at once with a null, and a sequence without `every`
    re-arms: defined Siddhi 3.2 behaviour, kept in both modes."""
    query = "from e1=A -> e2=B<0:1> select e1.id as a, e2[0].id as b insert into Out;"
    seq = "from e1=A, e2=B select e1.id as a, e2.id as b insert into Out;"
    for q, events in (
        (query, [("A", 1), ("B", 2)]),
        (seq, [("A", 1), ("B", 2), ("A", 3), ("B", 4)]),
    ):
        assert rows("3.2", q, events) == rows("fixed", q, events) != []


@pytest.mark.parametrize("value", ["sane", "3.3", ""])
def test_an_unknown_mode_is_refused_with_its_position(value):
    text = f"@Plan:name('P')\n  @Plan:siddhi('{value}')\ndefine stream A (id int);\n"
    with pytest.raises(AnnotationError, match="not a known Siddhi compatibility mode") as err:
        compile_plan(text)
    assert (err.value.line, err.value.column) == (2, 3)


def test_the_mode_is_on_the_plan_model():
    assert compile_plan(BASE).siddhi_mode == "3.2"
    assert compile_plan(MODES["fixed"] + BASE).siddhi_mode == "fixed"
    assert compile_plan("@Plan:siddhi('FIXED')\n" + BASE).siddhi_mode == "fixed"
