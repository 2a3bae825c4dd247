"""Siddhi 3.2 rules of time that differential testing found (issue 12): every timer due by an
event fires, in every query, before any query sees the event; expired rows are stamped with
the plan clock; a late event in a time window expires at the next clock advance. Each rule in
query shapes other than the fuzz case that found it, one at a time and in batches
(within one batch, queries still see the batch one after the other: only timers pending when
the batch arrives come first)."""

import pytest

from tests.cep.engine.helpers import collect, feed, runtime


def run(plan, events, outs=("Out",), batch=1):
    rt = runtime("@Plan:playback\n" + plan)
    got = collect(rt, list(outs))
    feed(rt, events, batch)
    rt.shutdown()
    return got if len(outs) > 1 else got[outs[0]]


# -- timers fire before any query sees the event --


@pytest.mark.parametrize("batch", [1, 5])
def test_a_time_window_expiry_in_the_second_query_comes_before_the_first_querys_row(batch):
    plan = (
        "define stream S (s string, i int);\n"
        "from S[i > 5] select s, i insert into Out;\n"
        "from S#window.time(500 milliseconds) select s, i insert expired events into Out;"
    )
    got = run(
        plan,
        [("S", 1000, ("A", 1)), ("clock", 1100), ("S", 1600, ("B", 9)), ("S", 1700, ("C", 7))],
        batch=batch,
    )
    assert got == [(1600, ("A", 1)), (1600, ("B", 9)), (1700, ("C", 7))]


@pytest.mark.parametrize("batch", [1, 5])
def test_a_timebatch_flush_due_before_an_event_comes_out_before_its_sibling_row(batch):
    plan = (
        "define stream S (s string, i long);\n"
        "from S select s, i insert into Out;\n"
        "from S#window.timeBatch(1 sec) select s, sum(i) as t insert into Out2;\n"
        "from Out2 select s, t as i insert into Out;"
    )
    got = run(
        plan,
        [("S", 1000, ("A", 1)), ("S", 1200, ("B", 2)), ("clock", 1300), ("S", 2500, ("C", 4))],
        batch=batch,
    )
    assert [r for _, r in got] == [("A", 1), ("B", 2), ("B", 3), ("C", 4)]


def test_a_sole_query_keeps_its_inline_expiry_within_a_batch():
    plan = (
        "define stream S (s string, i int);\n"
        "from S#window.time(500 milliseconds) select s, sum(i) as t insert all events "
        "into Out;"
    )
    events = [("S", 1000, ("A", 1)), ("S", 1400, ("B", 2)), ("S", 1600, ("C", 4))]
    assert run(plan, events, batch=10) == run(plan, events, batch=1)


# -- expired rows carry the plan clock --

_FLUSH = (
    "define stream S (s string, i int);\n"
    "from S#window.timeBatch(200 milliseconds) select s, i insert into Mid;\n"
)
_FLUSH_EVENTS = [("S", 1000, ("C", 4)), ("S", 1100, ("D", 5)), ("S", 1350, ("A", 1))]


@pytest.mark.parametrize(
    "window",
    ["length(1)", "sort(1, s, 'desc')", "unique(i)", "lengthBatch(1)", "timeLength(10 sec, 1)"],
)
@pytest.mark.parametrize("batch", [1, 3])
def test_a_row_expired_by_a_flushed_arrival_is_stamped_with_the_flush_clock(window, batch):
    plan = _FLUSH + (f"from Mid#window.{window} select s, i insert expired events into Out;")
    got = run(
        plan, [("S", 1000, ("C", 4)), ("S", 1100, ("D", 4)), ("S", 1350, ("A", 1))], batch=batch
    )
    assert got == [(1350, ("C", 4))]


@pytest.mark.parametrize("agg", ["sum(i) as t", "count() as t"])
def test_the_fused_length_aggregate_stamps_the_expired_row_with_the_clock(agg):
    plan = _FLUSH + f"from Mid#window.length(1) select s, {agg} insert expired events into Out;"
    got = run(plan, _FLUSH_EVENTS)
    assert [ts for ts, _ in got] == [1350]


# -- a late event in a time window expires at the next clock advance --


@pytest.mark.parametrize("select", ["s, i", "s, sum(i) as i"])
@pytest.mark.parametrize("batch", [1, 3])
def test_a_late_event_in_a_time_window_waits_for_the_next_clock_advance(select, batch):
    plan = (
        "define stream S (s string, i int);\n"
        f"from S#window.time(1 sec) select {select} insert expired events into Out;"
    )
    rt = runtime("@Plan:playback\n" + plan)
    got = collect(rt, ["Out"])
    feed(rt, [("clock", 5000), ("S", 1000, ("L", 1))], batch)
    assert got["Out"] == []  # not expired on arrival, though 1000 + 1 sec has passed
    rt.advance_time(5000)
    assert got["Out"] == []
    rt.advance_time(5300)
    assert [(ts, r[0]) for ts, r in got["Out"]] == [(5300, "L")]
    rt.shutdown()


def test_a_late_event_behind_a_live_one_leaves_with_it_stamped_with_the_clock():
    plan = (
        "define stream S (s string, i int);\n"
        "from S#window.time(1 sec) select s, i insert expired events into Out;"
    )
    got = run(plan, [("S", 4800, ("A", 1)), ("S", 1000, ("L", 2)), ("S", 5900, ("B", 3))])
    assert got == [(5900, ("A", 1)), (5900, ("L", 2))]
