"""`not S for T` as a side of `and` / `or` and `every not S for T` (Siddhi 4's query guide),
on event time; matches that a deadline completes are stamped with the time the clock reached.
Unsupported forms are rejected by the compiler with a position."""

import pytest

from cep.compiler import compile as compile_plan
from cep.engine.runtime import ExecutionPlanRuntime
from cep.errors import SiddhiQLError

BASE = """@Plan:playback
define stream A (x int);
define stream B (x int);
define stream C (x int);
"""
AND = "from e1=C -> not A for 1 sec and e2=B select e1.x as c, e2.x as b insert into Out;"
OR = "from e1=C -> not A for 1 sec or e2=B select e1.x as c, e2.x as b insert into Out;"
BOTH = "from e1=C -> not A for 1 sec {} not B for 2 sec select e1.x as c insert into Out;"


def run(query, events, restore_at=None):
    text = BASE + query
    rt = ExecutionPlanRuntime(compile_plan(text))
    got = []
    rt.add_callback("Out", got.extend)
    for n, e in enumerate(events):
        if n == restore_at:  # go on in a fresh runtime restored from a snapshot
            blob = rt.snapshot()
            rt = ExecutionPlanRuntime(compile_plan(text))
            rt.add_callback("Out", got.extend)
            rt.restore(blob)
        if e[0] == "clock":
            rt.advance_time(e[1])
        else:
            rt.input_handler(e[0]).send((e[2],), e[1])
    return got


@pytest.mark.parametrize(
    "events, expected",
    [
        ([("C", 0, 1), ("B", 300, 2), ("clock", 1500)], [(1500, (1, 2))]),  # B waits for T
        ([("C", 0, 1), ("clock", 1200), ("B", 2000, 2)], [(2000, (1, 2))]),  # B after T
        ([("C", 0, 1), ("B", 300, 2), ("A", 600, 3), ("clock", 3000)], []),  # A kills the pair
        ([("C", 0, 1), ("A", 500, 3), ("B", 700, 2), ("clock", 3000)], []),
    ],
)
def test_not_for_and_event(events, expected):
    assert run(AND, events) == expected


def test_not_for_and_event_survives_a_snapshot_while_waiting():
    events = [("C", 0, 1), ("B", 300, 2), ("clock", 1500)]
    assert run(AND, events, restore_at=2) == [(1500, (1, 2))]


@pytest.mark.parametrize(
    "events, expected",
    [
        ([("C", 0, 1), ("B", 300, 2), ("clock", 2000)], [(300, (1, 2))]),  # B first
        ([("C", 0, 1), ("clock", 1500)], [(1500, (1, None))]),  # the deadline first
        ([("C", 0, 1), ("A", 200, 3), ("B", 800, 2)], [(800, (1, 2))]),  # A fails only `not A`
        ([("C", 0, 1), ("A", 200, 3), ("clock", 3000)], []),
    ],
)
def test_not_for_or_event(events, expected):
    assert run(OR, events) == expected


@pytest.mark.parametrize(
    "op, events, expected",
    [
        ("and", [("C", 0, 1), ("clock", 2500)], [(2500, (1,))]),
        ("and", [("C", 0, 1), ("clock", 1500), ("B", 1800, 2), ("clock", 2500)], []),
        ("and", [("C", 0, 1), ("A", 500, 2), ("clock", 2500)], []),
        ("or", [("C", 0, 1), ("clock", 1500), ("clock", 2500)], [(1500, (1,))]),
        ("or", [("C", 0, 1), ("A", 500, 2), ("clock", 2500)], [(2500, (1,))]),
        ("or", [("C", 0, 1), ("A", 500, 2), ("B", 600, 2), ("clock", 2500)], []),
    ],
)
def test_two_absences(op, events, expected):
    assert run(BOTH.format(op), events) == expected


def test_absence_and_event_from_the_start():
    q = "from not A for 1 sec and e2=B select e2.x as b insert into Out;"
    assert run(q, [("B", 0, 5), ("clock", 1500), ("B", 1600, 6)]) == [(1500, (5,))]
    assert run(q, [("B", 0, 5), ("A", 900, 1), ("clock", 1500)]) == []


def test_every_not_for_hands_on_each_quiet_period():
    q = "from every not A for 1 sec -> e2=B select e2.x as b insert into Out;"
    events = [
        ("B", 0, 1),
        ("clock", 1000),
        ("B", 1100, 2),  # 0-1000 quiet: B at 1100 fits
        ("A", 1500, 3),  # the period 1000-2000 is broken: a new one runs 1500-2500
        ("B", 1600, 9),
        ("clock", 2500),
        ("B", 2600, 4),
    ]
    assert run(q, events) == [(1100, (2,)), (2600, (4,))]


@pytest.mark.parametrize(
    "query, word",
    [
        ("from e1=A, not B for 1 sec select e1.x as a insert into Out;", "sequences"),
        ("from e1=A, not B and e2=C select e1.x as a insert into Out;", "sequences"),
        ("from not A and not B for 1 sec -> e1=C select e1.x as a insert into Out;", "occurs"),
        ("from e1=A -> not B or e2=C select e1.x as a insert into Out;", "for <time>"),
    ],
)
def test_unsupported_absences_are_rejected_by_the_compiler(query, word):
    with pytest.raises(SiddhiQLError, match=word) as info:
        compile_plan(BASE + query)
    assert info.value.line == 5 and info.value.column >= 6  # past `from `
