"""Siddhi 3.2 rules of patterns and sequences found by differential testing (issue 12), each in
other query shapes than the fuzz case that found it (tests/conformance/cases/fuzz/)."""

import pickle

import pytest

from cep.compiler import compile as compile_plan
from cep.engine.runtime import ExecutionPlanRuntime

BASE = """@Plan:playback
define stream A (id int);
define stream B (id int);
define stream C (id int);
define stream D (id int);
"""


def runtime(query):
    rt = ExecutionPlanRuntime(compile_plan(BASE + query))
    got = []
    rt.add_callback("Out", got.extend)
    return rt, got


def run(query, events):
    """events: (stream, ts, id); returns (ts, row) of each output."""
    rt, got = runtime(query)
    for sid, ts, i in events:
        rt.input_handler(sid).send((i,), ts)
    return [(ts, row) for ts, row in got]


def rows(query, events):
    return [row for _, row in run(query, events)]


# -- a pattern that starts with `and`/`or` starts with two partials: each match comes twice ----
def test_or_then_next_emits_each_match_twice():
    q = "from (e1=A or e2=B) -> e3=C select e1.id as a, e2.id as b, e3.id as c insert into Out;"
    assert rows(q, [("B", 1000, 2), ("C", 1100, 3)]) == [(None, 2, 3), (None, 2, 3)]


def test_logical_start_before_two_states_and_alone():
    q = (
        "from (e1=A or e2=B) -> e3=C -> e4=D "
        "select e1.id as a, e3.id as c, e4.id as d insert into Out;"
    )
    events = [("A", 1000, 1), ("C", 1100, 3), ("D", 1200, 4)]
    assert rows(q, events) == [(1, 3, 4)] * 2
    q = "from e1=A and e2=B select e1.id as a, e2.id as b insert into Out;"
    assert rows(q, [("B", 1000, 2), ("A", 1100, 1)]) == [(1, 2)] * 2


def test_every_logical_start_emits_each_match_twice():
    q = (
        "from every (e1=A or e2=B) -> e3=C "
        "select e1.id as a, e2.id as b, e3.id as c insert into Out;"
    )
    events = [("A", 1000, 1), ("C", 1100, 3), ("B", 1200, 2), ("C", 1300, 4)]
    assert rows(q, events) == [(1, None, 3)] * 2 + [(None, 2, 4)] * 2


def test_a_logical_state_after_the_start_hands_on_once():
    q = (
        "from e0=D -> (e1=A and e2=B) -> e3=C "
        "select e0.id as d, e1.id as a, e2.id as b, e3.id as c insert into Out;"
    )
    events = [("D", 900, 0), ("A", 1000, 1), ("B", 1100, 2), ("C", 1200, 3)]
    assert rows(q, events) == [(0, 1, 2, 3)]
    q = "from e0=D -> (e1=A or e2=B) select e0.id as d, e1.id as a insert into Out;"
    assert rows(q, [("D", 900, 0), ("A", 1000, 1)]) == [(0, 1)]


# -- `every A<n:m>`: the restart shares the collected list ------------------------------------
EVERY_COUNT = (
    "from every e1=A<{}> -> e2=B select e1[0].id as a0, e1[1].id as a1, "
    "e1[last].id as al, e2.id as b insert into Out;"
)


def test_every_exact_count_keeps_collecting_until_the_next_state():
    events = [("A", 1000 + i, i) for i in range(1, 5)] + [("B", 2000, 9)]
    assert rows(EVERY_COUNT.format(2), events) == [(1, 2, 4, 9)]


def test_every_open_count_starts_no_new_instance_and_matches_once():
    events = [
        ("A", 1000, 1),
        ("A", 1100, 2),
        ("B", 1200, 9),
        ("A", 1300, 3),
        ("A", 1400, 4),
        ("B", 1500, 8),
    ]
    assert rows(EVERY_COUNT.format("1:"), events) == [(1, 2, 2, 9)]


def test_every_count_with_a_filter_counts_only_what_fits():
    q = (
        "from every e1=A[id > 0]<2> -> e2=B select e1[0].id as a0, e1[last].id as al, "
        "e2.id as b insert into Out;"
    )
    events = [
        ("A", 1000, 1),
        ("A", 1100, -5),
        ("A", 1200, 2),
        ("A", 1300, -6),
        ("A", 1400, 3),
        ("B", 1500, 9),
    ]
    assert rows(q, events) == [(1, 3, 9)]


def test_every_count_snapshot_keeps_the_shared_list():
    q = EVERY_COUNT.format(2)
    rt, _ = runtime(q)
    for ts, i in ((1000, 1), (1100, 2), (1200, 3)):
        rt.input_handler("A").send((i,), ts)
    blob = pickle.dumps(rt.snapshot())
    fresh, got = runtime(q)
    fresh.restore(pickle.loads(blob))
    fresh.input_handler("A").send((4,), 1300)
    fresh.input_handler("B").send((9,), 1400)
    assert [row for _, row in got] == [(1, 2, 4, 9)]


# -- `within` bounds only the gap between the last two matched events -------------------------
def test_within_bounds_the_last_gap_of_a_pattern_and_a_sequence():
    for arrow in ("->", ","):
        q = (
            f"from e1=A {arrow} e2=B {arrow} e3=C within 500 milliseconds "
            "select e1.id as a, e3.id as c insert into Out;"
        )
        assert rows(q, [("A", 0, 1), ("B", 3000, 2), ("C", 3500, 3)]) == [(1, 3)]
        assert rows(q, [("A", 0, 1), ("B", 3000, 2), ("C", 3501, 3)]) == []


def test_within_on_a_final_count_is_not_applied():
    """Siddhi 3.2's counting states never check `within` (the real engine emits (1, 3) for
    both streams, and for B at 1900 and 1901)."""
    q = "from e1=A -> e2=B<2> within 1 sec select e1.id as a, e2[1].id as b insert into Out;"
    assert rows(q, [("A", 0, 1), ("B", 900, 2), ("B", 1800, 3)]) == [(1, 3)]
    assert rows(q, [("A", 0, 1), ("B", 900, 2), ("B", 1901, 3)]) == [(1, 3)]
    assert rows(q, [("A", 0, 1), ("B", 1900, 2), ("B", 1901, 3)]) == [(1, 3)]


def test_within_on_a_final_count_bounds_each_gap_when_fixed():
    q = "from e1=A -> e2=B<2> within 1 sec select e1.id as a, e2[1].id as b insert into Out;"
    rt = ExecutionPlanRuntime(compile_plan("@Plan:siddhi('fixed')\n" + BASE + q))
    got = []
    rt.add_callback("Out", got.extend)
    for sid, ts, i in [("A", 0, 1), ("B", 900, 2), ("B", 1901, 3), ("B", 2000, 4)]:
        rt.input_handler(sid).send((i,), ts)
    assert [row for _, row in got] == []
    assert rows(q, [("A", 0, 1), ("B", 900, 2), ("B", 1800, 3)]) == [(1, 3)]


@pytest.mark.parametrize(
    "final", ["e2=B or e3=C", "e2=B and e3=C", "(e2=B and e3=C)", "(e2=B or e3=C)"]
)
def test_within_after_a_final_logical_state_is_not_applied(final):
    """Siddhi 3.2.15 (the real engine, ../shared/siddhi-kit) matches `A -> B and C within T`
    and `A -> B or C within T` whatever the gaps: 0/900/1800, 0/100/1101, 0/1001/1500 and
    0/5000/9000 all match with T = 1 sec, as does C alone at 1001 after A at 0."""
    q = f"from e1=A -> {final} within 1 sec select e1.id as a, e3.id as c insert into Out;"
    if " or " in final:
        assert rows(q, [("A", 0, 1), ("C", 1000, 3)]) == [(1, 3)]
        assert rows(q, [("A", 0, 1), ("C", 1001, 3)]) == [(1, 3)]
        assert rows(q, [("A", 0, 1), ("C", 9000, 3)]) == [(1, 3)]
        return
    for b, c in ((900, 1800), (100, 1101), (1001, 1500), (5000, 9000)):
        assert rows(q, [("A", 0, 1), ("B", b, 2), ("C", c, 3)]) == [(1, 3)], (b, c)


def test_within_after_a_final_every_is_not_applied():
    q = (
        "from e1=A -> e2=B -> every e3=C within 1 sec "
        "select e1.id as a, e3.id as c insert into Out;"
    )
    events = [("A", 0, 1), ("B", 100, 2), ("C", 5000, 3), ("C", 9000, 4)]
    assert rows(q, events) == [(1, 3), (1, 4)]


def test_zero_min_count_with_within_needs_some_earlier_event():
    q = "from e1=A<0:2> -> e2=B within 1 sec select e1[0].id as a, e2.id as b insert into Out;"
    assert rows(q, [("B", 1000, 4)]) == []
    assert rows(q, [("B", 999, 4)]) == [(None, 4)]  # 999 - (-1) <= 1000: Siddhi's unset time
    assert rows(q, [("A", 900, 1), ("B", 1000, 4)]) == [(1, 4)]
    q = (
        "from e0=D -> e1=A<0:2> -> e2=B within 1 sec "
        "select e0.id as d, e1[0].id as a, e2.id as b insert into Out;"
    )
    assert rows(q, [("D", 0, 7), ("B", 1000, 4)]) == [(7, None, 4)]


# -- counting states at the end -----------------------------------------------------------------
@pytest.mark.parametrize("tail", ["e2=B?", "e2=B*"])
def test_sequence_trailing_optional_completes_with_the_start_event(tail):
    q = f"from every e1=A, {tail} select e1.id as a, e2[0].id as b insert into Out;"
    events = [("A", 1000, 1), ("B", 1100, 2), ("A", 1200, 3)]
    assert run(q, events) == [(1000, (1, None)), (1200, (3, None))]


def test_pattern_trailing_zero_min_count_completes_at_once():
    q = "from e1=A -> e2=B<0:2> select e1.id as a, e2[0].id as b insert into Out;"
    assert run(q, [("A", 1000, 1), ("B", 1100, 2)]) == [(1000, (1, None))]


@pytest.mark.parametrize("tail", ["e2=B+", "e2=B<2>", "e2=B<2:3>"])
def test_sequence_ending_in_a_count_never_emits(tail):
    q = f"from every e1=A, {tail} select e1.id as a insert into Out;"
    events = [("A", 1000, 1)] + [("B", 1100 + i, i) for i in range(4)] + [("A", 2000, 5)]
    assert rows(q, events) == []


def test_pattern_final_count_emits_once_at_its_minimum():
    q = (
        "from e1=A -> e2=B<2:3> select e1.id as a, e2[0].id as b0, e2[last].id as bl "
        "insert into Out;"
    )
    events = [("A", 1000, 1), ("B", 1100, 2), ("B", 1200, 3), ("B", 1300, 4)]
    assert run(q, events) == [(1200, (1, 2, 3))]


# -- a sequence without `every` re-arms --------------------------------------------------------
def test_sequence_without_every_rearms_after_a_match():
    q = "from e1=A, e2=B, e3=C select e1.id as a, e3.id as c insert into Out;"
    events = [("A", 1, 1), ("B", 2, 2), ("C", 3, 3), ("A", 4, 4), ("B", 5, 5), ("C", 6, 6)]
    assert rows(q, events) == [(1, 3), (4, 6)]


def test_sequence_without_every_rearms_after_a_broken_partial():
    q = "from e1=A, e2=B select e1.id as a, e2.id as b insert into Out;"
    assert rows(q, [("A", 1, 1), ("A", 2, 2), ("B", 3, 3)]) == [(2, 3)]
    assert rows(q, [("A", 1, 1), ("B", 2, 2), ("B", 3, 3), ("A", 4, 4), ("B", 5, 5)]) == [
        (1, 2),
        (4, 5),
    ]


def _fixed_rows(query, events):
    rt = ExecutionPlanRuntime(compile_plan("@Plan:siddhi('fixed')\n" + BASE + query))
    got = []
    rt.add_callback("Out", got.extend)
    for sid, ts, i in events:
        rt.input_handler(sid).send((i,), ts)
    return [row for _, row in got]


@pytest.mark.parametrize(
    "group,sel",
    [
        ("e1=A -> e2=B<1:2>", "e1.id as a, e2[0].id as b"),
        ("e1=A -> e2=B<1:2> -> e4=D", "e1.id as a, e2[0].id as b"),
    ],
)
def test_every_group_with_a_count_restarts_only_when_fixed(group, sel):
    """Siddhi 3.2's `every` restart keeps the group's count list (a shallow copy): ending the
    group, the copy starts past the minimum and never hands on again; before the group's
    last state, the copy still holds that state's event and the count state drops it. The
    real engine matches only the first group (conformance case
    every-group-ending-in-a-count-restarts-only-once)."""
    q = f"from every ({group}) -> e3=C select {sel}, e3.id as c insert into Out;"
    ev = [
        ("A", 0, 1),
        ("B", 100, 2),
        ("D", 150, 0),
        ("C", 200, 3),
        ("A", 300, 4),
        ("B", 400, 5),
        ("D", 450, 0),
        ("C", 500, 6),
    ]
    assert rows(q, ev) == [(1, 2, 3)]
    assert _fixed_rows(q, ev) == [(1, 2, 3), (4, 5, 6)]
