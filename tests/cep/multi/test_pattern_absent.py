"""Non-occurrence in patterns (Siddhi 4+): `not S for T` and `not S and B`, on event time."""

import pytest

from cep.compiler import compile as compile_plan
from cep.engine.runtime import ExecutionPlanRuntime
from cep.errors import CepError

BASE = """@Plan:playback
define stream A (id int, p double);
define stream B (id int, p double);
define stream C (id int, p double);
"""


def run(query, events, until=None, restore_at=None):
    text = BASE + query
    rt = ExecutionPlanRuntime(compile_plan(text))
    got = []
    rt.add_callback("Out", lambda b: got.extend(b))
    for n, (sid, ts, row) in enumerate(events):
        if n == restore_at:  # continue on a fresh runtime restored from a snapshot
            blob = rt.snapshot()
            rt = ExecutionPlanRuntime(compile_plan(text))
            rt.add_callback("Out", lambda b: got.extend(b))
            rt.restore(blob)
        rt.input_handler(sid).send(row, ts)
    if until is not None:
        rt.advance_time(until)
    return got


def test_absence_deadline_emits_when_nothing_came():
    q = "from every e1=A -> not B[p > e1.p] for 2 sec select e1.id as a insert into Out;"
    events = [
        ("A", 1000, (1, 5.0)),
        ("B", 1500, (1, 1.0)),
        ("A", 2000, (2, 5.0)),
        ("B", 2500, (2, 6.0)),
        ("A", 4000, (3, 1.0)),
        ("C", 5000, (1, 0.0)),
    ]
    # A1 and A2 are cancelled by B(6.0) > their price; A3's two seconds pass at 6000
    assert run(q, events, until=7000) == [(7000, (3,))]
    assert run(q, events + [("C", 6000, (2, 0.0))]) == [(6000, (3,))]


def test_deadline_survives_a_snapshot():
    q = "from every e1=A -> not B for 2 sec select e1.id as a insert into Out;"
    events = [("A", 1000, (1, 5.0)), ("C", 1500, (1, 0.0)), ("C", 3500, (2, 0.0))]
    assert run(q, events, restore_at=1) == [(3500, (1,))]


def test_not_and_needs_the_other_event_first():
    q = "from every e1=A -> not B and e3=C select e1.id as a, e3.id as c insert into Out;"
    events = [
        ("A", 1000, (1, 0.0)),
        ("B", 1500, (1, 0.0)),
        ("C", 1600, (1, 0.0)),
        ("A", 2000, (2, 0.0)),
        ("C", 2100, (2, 0.0)),
        ("B", 2200, (3, 0.0)),
    ]
    assert run(q, events) == [(2100, (2, 2))]


def test_absence_from_the_start_and_an_early_event():
    q = "from not A for 2 sec -> e2=B select e2.id as b insert into Out;"
    assert run(q, [("B", 1000, (1, 0.0)), ("B", 3500, (2, 0.0))]) == [(3500, (2,))]
    assert run(q, [("A", 1000, (1, 0.0)), ("B", 3500, (2, 0.0))]) == []


def test_absence_inside_a_partition_is_per_key():
    q = """partition with (id of A, id of B) begin
      from every e1=A -> not B for 1 sec select e1.id as a insert into Out; end;"""
    events = [
        ("A", 1000, (1, 0.0)),
        ("A", 1100, (2, 0.0)),
        ("B", 1500, (2, 0.0)),
        ("C", 3000, (0, 0.0)),
    ]
    assert run(q, events) == [(3000, (1,))]


def test_not_without_for_outside_and_is_rejected():
    with pytest.raises(CepError, match="for"):
        run("from e1=A -> not B select e1.id as a insert into Out;", [])


def test_absence_in_a_sequence_is_rejected():
    with pytest.raises(CepError, match="sequences"):
        run("from every e1=A, not B for 1 sec select e1.id as a insert into Out;", [])


def test_absence_deadline_on_the_wall_clock():
    import threading

    text = BASE.replace("@Plan:playback\n", "") + (
        "from every e1=A -> not B for 150 millisec select e1.id as a insert into Out;"
    )
    rt = ExecutionPlanRuntime(compile_plan(text))
    done, got = threading.Event(), []
    rt.add_callback("Out", lambda b: (got.extend(b), done.set()))
    try:
        rt.input_handler("A").send((7, 1.0))
        assert done.wait(5.0), "the deadline timer never fired"
        assert [r for _, r in got] == [(7,)]
    finally:
        rt.shutdown()
