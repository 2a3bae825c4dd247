"""`every (...) within T` scoped to its group (Siddhi 4): the group's events lie within T of the
group's first event; states outside the group are not bounded by it; a partial that runs out
of time inside the group is dropped and the group starts again."""

import pytest

from cep.compiler import compile as compile_plan
from cep.engine.runtime import ExecutionPlanRuntime
from cep.errors import SiddhiQLError

BASE = """@Plan:playback
define stream A (id int);
define stream B (id int);
define stream C (id int);
"""


def run(query, events, batch=False):
    rt = ExecutionPlanRuntime(compile_plan(BASE + query))
    got = []
    rt.add_callback("Out", got.extend)
    for sid, ts, i in events:
        rt.input_handler(sid).send((i,), ts)
    return [row for _, row in got]


GROUP_FIRST = (
    "from every (e1=A -> e2=B) within 1 sec -> e3=C "
    "select e1.id as a, e2.id as b, e3.id as c insert into Out;"
)


def test_states_after_the_group_are_not_bounded_by_its_within():
    events = [("A", 0, 1), ("B", 500, 2), ("C", 9000, 3)]
    assert run(GROUP_FIRST, events) == [(1, 2, 3)]


def test_the_bound_is_inclusive():
    assert run(GROUP_FIRST, [("A", 0, 1), ("B", 1000, 2), ("C", 1001, 3)]) == [(1, 2, 3)]


def test_a_group_that_runs_out_of_time_starts_again():
    events = [
        ("A", 0, 1),
        ("B", 1500, 2),  # too late: dropped, the group waits for an A
        ("A", 2000, 3),
        ("B", 2600, 4),
        ("C", 2700, 5),
    ]
    assert run(GROUP_FIRST, events) == [(3, 4, 5)]


def test_restart_happens_before_the_event_that_finds_it_late():
    # the A at 1500 finds the first partial out of time: the group restarts and takes it
    events = [("A", 0, 1), ("A", 1500, 2), ("B", 2000, 3), ("C", 2100, 4)]
    assert run(GROUP_FIRST, events) == [(2, 3, 4)]


def test_whole_pattern_every_group_restarts_after_a_timeout():
    q = "from every (e1=A -> e2=B) within 1 sec select e1.id as a, e2.id as b insert into Out;"
    events = [
        ("A", 0, 1),
        ("B", 2000, 2),
        ("A", 3000, 3),
        ("B", 3500, 4),
        ("A", 3600, 5),
        ("B", 4700, 6),
    ]
    assert run(q, events) == [(3, 4)]


def test_group_after_a_plain_state_keeps_the_earlier_event():
    q = (
        "from e0=C -> every (e1=A -> e2=B) within 1 sec "
        "select e0.id as c, e1.id as a, e2.id as b insert into Out;"
    )
    events = [
        ("C", 0, 9),
        ("A", 100, 1),
        ("B", 5000, 2),  # the group ran out of time
        ("A", 6000, 3),
        ("B", 6500, 4),
        ("A", 7000, 5),
        ("B", 7100, 6),
    ]
    assert run(q, events) == [(9, 3, 4), (9, 5, 6)]


def test_logical_group_with_within():
    q = (
        "from every (e1=A and e2=B) within 1 sec -> e3=C "
        "select e1.id as a, e2.id as b, e3.id as c insert into Out;"
    )
    events = [
        ("A", 0, 1),
        ("B", 1200, 2),  # too far apart: restart, B at 1200 counts again
        ("A", 1900, 3),
        ("C", 5000, 4),
    ]
    # an `and` followed by a state hands each match on twice (Siddhi 3.2): C emits it twice
    assert run(q, events) == [(3, 2, 4), (3, 2, 4)]


def test_outer_within_bounds_the_last_gap():
    # Siddhi 3.2 attaches a trailing `within` to the last state: C within 2 sec of B
    q = (
        "from every (e1=A -> e2=B) within 1 sec -> e3=C within 2 sec "
        "select e1.id as a, e3.id as c insert into Out;"
    )
    assert run(q, [("A", 0, 1), ("B", 500, 2), ("C", 2501, 3)]) == []
    assert run(q, [("A", 0, 1), ("B", 500, 2), ("C", 2500, 3)]) == [(1, 3)]


@pytest.mark.parametrize(
    "query, word",
    [
        (
            "from every (e1=A -> e2=B<2>) within 1 sec select e1.id as a insert into Out;",
            "counting",
        ),
        (
            "from every (e1=A -> not B for 1 sec) within 2 sec select e1.id as a insert into Out;",
            "not",
        ),
        (
            "from every (e1=A -> every (e2=B -> e3=C) within 1 sec) within 2 sec "
            "select e1.id as a insert into Out;",
            "nested",
        ),
    ],
)
def test_unsupported_group_contents_are_rejected_by_the_compiler(query, word):
    with pytest.raises(SiddhiQLError, match=word) as info:
        compile_plan(BASE + query)
    assert info.value.line == 5 and info.value.column > 6
