"""Siddhi 3.2 join rules that differential testing found (issue 12), each in query shapes
other than the fuzz case that found it: any window on a join side, one selector call per
probing row (flushes, expiry chunks), expired rows of outer joins, windowless sides and
tables aggregating per trigger, a timeBatch side's fixed grid."""

import pytest

from cep.engine.runtime import ExecutionPlanRuntime
from tests.cep.engine.helpers import collect, feed, runtime

LR = "define stream L (s string, i int, ets long);\ndefine stream R (s string, j int);\n"


def run(plan, events, out="Out", batch=1):
    rt = runtime("@Plan:playback\n" + plan)
    got = collect(rt, [out])
    feed(rt, events, batch)
    rt.shutdown()
    return got[out]


def rows(got):
    return [r for _, r in got]


# -- windows other than length/time/batch on a join side --


@pytest.mark.parametrize(
    "window, want",
    [
        ("unique(s)", [("A", 3, 2)]),
        ("firstUnique(s)", [("A", 1, 2)]),
        ("sort(1, i)", [("A", 1, 2)]),
        ("sort(1, i, 'desc')", [("A", 3, 2)]),
        ("externalTime(ets, 100 milliseconds)", [("A", 3, 2)]),
        ("timeLength(10 sec, 1)", [("A", 3, 2)]),
        ("frequent(1, s)", [("A", 1, 2), ("A", 3, 2)]),
    ],
)
@pytest.mark.parametrize("batch", [1, 5])
def test_windows_beyond_length_time_batch_work_on_a_join_side(window, want, batch):
    plan = LR + (
        f"from L#window.{window} join R#window.length(2) on L.s == R.s "
        "select L.s as ls, L.i as li, R.j as rj insert into Out;"
    )
    got = run(
        plan,
        [("L", 1000, ("A", 1, 1000)), ("L", 1150, ("A", 3, 1150)), ("R", 1200, ("A", 2))],
        batch=batch,
    )
    assert rows(got) == want


@pytest.mark.parametrize(
    "window",
    [
        "lossyFrequent(0.1)",
        "cron('*/5 * * * * ?')",
        "externalTimeBatch(ets, 1 sec)",
        "delay(1 sec)",
        "uniqueExternalTimeBatch(s, ets, 1 sec)",
    ],
)
def test_every_other_window_is_accepted_on_a_join_side(window):
    plan = LR + (
        f"from L#window.{window} join R#window.length(2) on L.s == R.s "
        "select L.s as ls, R.j as rj insert into Out;"
    )
    run(
        plan,
        [
            ("L", 1000, ("A", 1, 1000)),
            ("R", 1100, ("A", 2)),
            ("L", 3000, ("A", 5, 3000)),
            ("R", 9000, ("A", 2)),
        ],
    )


def test_an_externaltimebatch_side_releases_its_batch_to_the_join():
    plan = LR + (
        "from L#window.externalTimeBatch(ets, 1 sec) join R#window.length(3) "
        "on L.s == R.s select L.i as li, R.j as rj insert into Out;"
    )
    got = run(
        plan,
        [
            ("R", 900, ("A", 7)),
            ("L", 1000, ("A", 1, 1000)),
            ("L", 1500, ("A", 2, 1500)),
            ("L", 2100, ("A", 3, 2100)),
        ],
    )
    assert rows(got) == [(1, 7), (2, 7)]  # released when 2100 ends the first batch


def test_a_unique_side_survives_a_snapshot():
    plan = (
        "@Plan:playback\n"
        + LR
        + (
            "from L#window.unique(s) join R#window.length(2) on L.s == R.s "
            "select L.i as li, R.j as rj insert into Out;"
        )
    )
    rt = runtime(plan)
    feed(rt, [("L", 1000, ("A", 1, 0)), ("L", 1100, ("A", 3, 0)), ("L", 1100, ("B", 4, 0))])
    data = rt.snapshot()
    rt2 = ExecutionPlanRuntime(rt.plan)
    got = collect(rt2, ["Out"])
    rt2.restore(data)
    feed(rt2, [("R", 1200, ("A", 2)), ("R", 1300, ("B", 5))])
    assert rows(got["Out"]) == [(3, 2), (4, 5)]
    rt.shutdown()
    rt2.shutdown()


# -- aggregates: one selector call per probing row --


@pytest.mark.parametrize("batch", [1, 4])
def test_a_lengthbatch_flush_emits_one_aggregate_row_per_joined_row(batch):
    plan = LR + (
        "from L#window.lengthBatch(2) join R#window.length(2) on L.s == R.s "
        "select L.s as s, sum(L.i) as t, count() as c group by L.s insert into Out;"
    )
    got = run(
        plan,
        [("R", 900, ("A", 0)), ("L", 1000, ("A", 1, 0)), ("L", 1100, ("A", 2, 0))],
        batch=batch,
    )
    assert got == [(1000, ("A", 1, 1)), (1100, ("A", 3, 2))]


def test_a_time_window_expiry_chunk_emits_one_expired_row_per_joined_row():
    plan = LR + (
        "from L#window.time(1 sec) join R#window.length(2) on L.s == R.s "
        "select sum(L.i) as t, count() as c insert expired events into Out;"
    )
    got = run(
        plan,
        [("R", 900, ("A", 0)), ("L", 1000, ("A", 1, 0)), ("L", 1100, ("A", 2, 0)), ("clock", 2500)],
    )
    assert got == [(2500, (2, 1)), (2500, (0, 0))]


@pytest.mark.parametrize("kind", ["left outer", "full outer"])
def test_an_outer_join_emits_the_aggregate_row_of_an_expiring_event(kind):
    plan = LR + (
        f"from L#window.length(1) {kind} join R#window.length(1) on L.s == R.s "
        "select sum(L.i) as t, count() as c insert all events into Out;"
    )
    got = run(plan, [("L", 1000, ("A", 1, 0)), ("L", 1400, ("B", 2, 0))])
    assert got == [(1000, (1, 1)), (1400, (0, 0)), (1400, (2, 1))]


def test_a_timebatch_outer_side_resets_the_aggregates_at_each_new_batch():
    plan = LR + (
        "from L#window.timeBatch(1 sec) left outer join R#window.length(1) "
        "on L.s == R.s select sum(L.i) as t insert into Out;"
    )
    got = run(
        plan,
        [
            ("L", 1000, ("A", 1, 0)),
            ("L", 1100, ("A", 2, 0)),
            ("L", 2100, ("A", 4, 0)),
            ("clock", 3000),
        ],
    )
    assert rows(got) == [(1,), (3,), (4,)]


# -- a side without a window, and a table, aggregate per trigger --


@pytest.mark.parametrize("batch", [1, 3])
def test_a_windowless_stream_side_aggregates_only_the_triggering_event(batch):
    plan = LR + (
        "from L join R#window.length(5) on L.s == R.s "
        "select L.s as s, sum(R.j) as t, count() as c insert into Out;"
    )
    got = run(
        plan,
        [
            ("R", 900, ("A", 2)),
            ("R", 950, ("A", 3)),
            ("L", 1000, ("A", 1, 0)),
            ("L", 1100, ("A", 1, 0)),
        ],
        batch=batch,
    )
    assert rows(got) == [("A", 5, 2), ("A", 5, 2)]


def test_a_table_join_with_group_by_aggregates_per_trigger():
    plan = (
        "define stream L (s string);\ndefine stream R (s string, v int);\n"
        "define table T (s string, v int);\n"
        "from R select s, v insert into T;\n"
        "from L join T on L.s == T.s select L.s as s, sum(T.v) as sv, max(T.v) as m "
        "group by L.s insert into Out;"
    )
    got = run(
        plan,
        [
            ("R", 1, ("B", 4)),
            ("R", 2, ("C", 9)),
            ("L", 3, ("B",)),
            ("R", 4, ("B", 3)),
            ("L", 5, ("B",)),
            ("L", 6, ("C",)),
        ],
    )
    assert rows(got) == [("B", 4, 4), ("B", 7, 4), ("C", 9, 9)]


# -- a timeBatch side keeps its grid; timers first --


def test_a_timebatch_side_flushes_on_its_grid_before_the_other_side_probes():
    plan = LR + (
        "from L#window.timeBatch(500 milliseconds) join R#window.length(5) "
        "on L.s == R.s select L.i as li, R.j as rj insert into Out;"
    )
    got = run(
        plan,
        [
            ("L", 1000, ("A", 1, 0)),
            ("L", 2600, ("A", 3, 0)),
            ("R", 2999, ("A", 5)),
            ("R", 3000, ("A", 6)),
        ],
    )
    # 2600 is in the batch [2500, 3000): released at 3000 (probing the R of 2999), before
    # the R of 3000 probes (a grid restarted at 2600 would release it at 3100)
    assert got == [(2600, (3, 5)), (3000, (3, 6))]


def test_a_due_join_timer_fires_before_a_sibling_query_sees_the_event():
    plan = LR + (
        "from L select s, i insert into Out;\n"
        "from L#window.timeBatch(500 milliseconds) join R#window.length(5) "
        "on L.s == R.s select L.s as s, R.j as i insert into Out;"
    )
    got = run(plan, [("R", 900, ("A", 7)), ("L", 1000, ("A", 1, 0)), ("L", 1600, ("B", 2, 0))])
    assert rows(got) == [("A", 1), ("A", 7), ("B", 2)]


def test_a_join_with_window_sides_in_a_partition_keeps_per_key_windows_and_timers():
    plan = LR + (
        "partition with (s of L, s of R) begin\n"
        "from L#window.unique(i) join R#window.time(1 sec) "
        "select L.s as s, L.i as li, R.j as rj insert all events into Out;\n"
        "end;"
    )
    got = run(
        plan,
        [
            ("R", 1000, ("A", 1)),
            ("R", 1000, ("B", 2)),
            ("L", 1100, ("A", 5, 0)),
            ("L", 1200, ("B", 6, 0)),
            ("clock", 2500),
        ],
    )
    assert got == [
        (1100, ("A", 5, 1)),
        (1200, ("B", 6, 2)),
        (2500, ("A", 5, 1)),
        (2500, ("B", 6, 2)),
    ]


def test_a_time_window_side_restored_from_a_snapshot_expires_on_its_timer():
    plan = (
        "@Plan:playback\n"
        + LR
        + (
            "from L#window.time(1 sec) join R#window.length(2) on L.s == R.s "
            "select L.i as li, R.j as rj insert expired events into Out;"
        )
    )
    rt = runtime(plan)
    feed(rt, [("R", 900, ("A", 7)), ("L", 1000, ("A", 1, 0))])
    data = rt.snapshot()
    rt2 = ExecutionPlanRuntime(rt.plan)
    got = collect(rt2, ["Out"])
    rt2.restore(data)
    rt2.advance_time(2100)
    assert got["Out"] == [(2100, (1, 7))]
    rt.shutdown()
    rt2.shutdown()


# -- order by / limit apply to each probing row's join rows --


@pytest.mark.parametrize("batch", [1, 3])
def test_order_by_and_limit_apply_to_the_rows_of_each_probing_row(batch):
    plan = LR + (
        "from L#window.length(5) join R#window.length(5) on L.s == R.s "
        "select L.i as li, R.j as rj order by li desc limit 2 insert into Out;"
    )
    got = run(
        plan,
        [
            ("L", 1, ("A", 1, 0)),
            ("L", 2, ("A", 3, 0)),
            ("L", 3, ("A", 2, 0)),
            ("R", 4, ("A", 9)),
            ("R", 5, ("A", 8)),
            ("L", 6, ("A", 7, 0)),
        ],
        batch=batch,
    )
    assert rows(got) == [(3, 9), (2, 9), (3, 8), (2, 8), (7, 9), (7, 8)]


def test_a_flush_on_an_outer_side_with_order_by_orders_each_row_alone():
    plan = LR + (
        "from L#window.lengthBatch(2) left outer join R#window.length(5) "
        "on L.s == R.s select L.i as li, R.j as rj order by rj limit 1 "
        "insert into Out;"
    )
    got = run(
        plan, [("R", 1, ("A", 5)), ("R", 2, ("A", 4)), ("L", 3, ("A", 1, 0)), ("L", 4, ("B", 2, 0))]
    )
    assert rows(got) == [(1, 4), (2, None)]


def test_a_time_window_side_expires_on_the_wall_clock():
    import time

    rt = runtime(
        LR
        + (
            "from L#window.time(200 milliseconds) join R#window.length(2) "
            "on L.s == R.s select L.i as li, R.j as rj "
            "insert expired events into Out;"
        )
    )
    got = collect(rt, ["Out"])
    rt.input_handler("R").send(("A", 1))
    rt.input_handler("L").send(("A", 2, 0))
    deadline = time.time() + 5
    while not got["Out"] and time.time() < deadline:
        time.sleep(0.05)
    rt.shutdown()
    assert rows(got["Out"]) == [(2, 1)]


def test_a_join_sides_expired_row_carries_the_clock_of_the_flush_that_pushed_it_out():
    plan = LR + (
        "from L#window.timeBatch(200 milliseconds) select s, i, ets insert into Mid;\n"
        "from Mid#window.length(1) join R#window.length(1) on Mid.s == R.s "
        "select Mid.i as mi, R.j as rj insert expired events into Out;"
    )
    got = run(
        plan,
        [
            ("R", 900, ("A", 9)),
            ("L", 1000, ("A", 1, 0)),
            ("L", 1100, ("A", 2, 0)),
            ("L", 1350, ("B", 3, 0)),
        ],
    )
    assert got == [(1350, (1, 9))]


@pytest.mark.parametrize("select", ["L.i as li, R.j as rj", "sum(L.i) as li, count() as rj"])
def test_rows_a_timebatch_flush_releases_keep_their_own_timestamps(select):
    plan = LR + (
        "from L#window.timeBatch(1 sec) join R#window.length(1) on L.s == R.s "
        f"select {select} insert into Out;"
    )
    got = run(
        plan,
        [("R", 900, ("A", 9)), ("L", 1000, ("A", 1, 0)), ("L", 1100, ("A", 2, 0)), ("clock", 2500)],
    )
    assert [ts for ts, _ in got] == [1000, 1100]  # released by the flush at 2000 (clock 2500)
