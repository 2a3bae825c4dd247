"""Siddhi 3.2 bugs that a second differential run found, each reproduced by default (and with
`@Plan:siddhi('3.2')`) and fixed by `@Plan:siddhi('fixed')`: maximum/minimum start from
Double.MIN_VALUE/MAX_VALUE and count a null as that value; lossyFrequent replaces a kept event
without expiring it; an externalTime join side probed by the other side skips its next
expiry; a timeBatch/lengthBatch join side probed since its last flush expires its rows with
their own timestamps; a timeBatch whose first event precedes its start time flushes a period
late (Java's remainder). Also in a partition and across a snapshot, where the mode must
survive."""

import pytest

from tests.cep.engine.helpers import collect, feed, runtime

MODES_32 = ("default", "3.2")


def run(mode, body, items, out="Out"):
    head = "" if mode == "default" else f"@Plan:siddhi('{mode}')\n"
    rt = runtime(head + "@Plan:playback\n" + body)
    got = collect(rt, [out])
    feed(rt, items)
    rt.shutdown()
    return got[out]


EXTREMA = (
    "define stream S (i int, l long, f float, d double);\n"
    "from S select maximum(i, -3) as mi, maximum(l, -5L) as ml, maximum(f, -1.5f) as mf,"
    " maximum(d, -0.5) as md, minimum(i, i) as ni, minimum(l, 9007199254740993L) as nl,"
    " minimum(d, d) as nd insert into Out;"
)
EXTREMA_IN = [
    ("S", 1000, (None, None, None, None)),
    ("S", 1100, (-4, -2, -2.5, -0.25)),
    ("S", 1200, (4, 9007199254740993, 0.5, 1.5)),
]


@pytest.mark.parametrize("mode", MODES_32)
def test_maximum_minimum_are_siddhi_32_by_default(mode):
    rows = [r for _, r in run(mode, EXTREMA, EXTREMA_IN)]
    # nulls count as Double.MIN_VALUE (maximum) / Double.MAX_VALUE (minimum), narrowed back
    assert rows[0] == (0, 0, 0.0, 5e-324, 2147483647, 9007199254740992, 1.7976931348623157e308)
    # negatives never beat Double.MIN_VALUE; longs pass through a double
    assert rows[1] == (0, 0, 0.0, 5e-324, -4, -2, -0.25)
    assert rows[2] == (4, 9007199254740992, 0.5, 1.5, 4, 9007199254740992, 1.5)


def test_maximum_minimum_fixed_skip_nulls_and_keep_negatives():
    rows = [r for _, r in run("fixed", EXTREMA, EXTREMA_IN)]
    assert rows[0] == (-3, -5, -1.5, -0.5, None, 9007199254740993, None)
    assert rows[1] == (-3, -2, -1.5, -0.25, -4, -2, -0.25)
    assert rows[2] == (4, 9007199254740993, 0.5, 1.5, 4, 9007199254740993, 1.5)


def test_maximum_of_literals_follows_the_mode():
    """Not folded at build time with the default helper: the mode decides at run time."""
    body = "define stream S (i int);\nfrom S select maximum(-3, -5) as m insert into Out;"
    assert [r for _, r in run("default", body, [("S", 1000, (1,))])] == [(0,)]
    assert [r for _, r in run("fixed", body, [("S", 1000, (1,))])] == [(-3,)]


def test_maximum_in_a_partition_follows_the_mode():
    body = (
        "define stream S (k string, i int);\npartition with (k of S) begin "
        "from S select k, maximum(i, -9) as m insert into Out; end;"
    )
    items = [("S", 1000, ("a", -4))]
    assert [r for _, r in run("default", body, items)] == [("a", 0)]
    assert [r for _, r in run("fixed", body, items)] == [("a", -4)]


LOSSY = (
    "define stream S (k string, i int);\n"
    "from S#window.lossyFrequent(0.1, 0.05, k) select k, count() as c, sum(i) as s "
    "insert all events into Out;"
)
LOSSY_IN = [("S", 1000, ("a", 1)), ("S", 1100, ("a", 2)), ("S", 1200, ("b", 4))]


@pytest.mark.parametrize("mode", MODES_32)
def test_lossyfrequent_replaces_without_expiring_in_32(mode):
    assert [r for _, r in run(mode, LOSSY, LOSSY_IN)] == [("a", 1, 1), ("a", 2, 3), ("b", 3, 7)]


def test_lossyfrequent_fixed_expires_the_replaced_event():
    assert [r for _, r in run("fixed", LOSSY, LOSSY_IN)] == [
        ("a", 1, 1),
        ("a", 0, 0),
        ("a", 1, 2),
        ("b", 2, 6),
    ]


EXT_JOIN = (
    "define stream S (k string, i int, l long);\ndefine stream T (k string, j int);\n"
    "from S#window.externalTime(l, 500) left outer join T#window.length(2) "
    "on S.k == T.k select S.k as k, S.i as i, T.j as j "
    "insert expired events into Out;"
)
EXT_IN = [
    ("S", 1050, ("b", 12, 300)),
    ("T", 2750, ("c", -1)),
    ("S", 3250, ("a", 1, 900)),
    ("S", 3260, ("a", 3, 1300)),
    ("S", 3300, ("a", 2, 5000)),
]


@pytest.mark.parametrize("mode", MODES_32)
def test_externaltime_join_side_skips_one_expiry_after_a_probe_in_32(mode):
    # T's probe: the arrival at l=900 expires nothing; l=1300 catches up with b (300)
    assert run(mode, EXT_JOIN, EXT_IN) == [
        (1300, ("b", 12, None)),
        (5000, ("a", 1, None)),
        (5000, ("a", 3, None)),
    ]


def test_externaltime_join_side_fixed_expires_on_every_arrival():
    assert run("fixed", EXT_JOIN, EXT_IN) == [
        (900, ("b", 12, None)),
        (5000, ("a", 1, None)),
        (5000, ("a", 3, None)),
    ]


@pytest.mark.parametrize("mode", ["default", "fixed"])
def test_externaltime_skip_survives_a_snapshot(mode):
    head = "" if mode == "default" else f"@Plan:siddhi('{mode}')\n"
    text = head + "@Plan:playback\n" + EXT_JOIN
    rt = runtime(text)
    feed(rt, EXT_IN[:2])
    state = rt.snapshot()
    rt.shutdown()
    rt2 = runtime(text)
    rt2.restore(state)
    got = collect(rt2, ["Out"])
    feed(rt2, EXT_IN[2:3])
    rt2.shutdown()
    assert got["Out"] == ([] if mode == "default" else [(900, ("b", 12, None))])


BATCH_JOIN = (
    "define stream A (k string, x int);\ndefine stream B (k string, y int);\n"
    "from A#window.timeBatch(500) join B#window.time(1500) select A.k as k, A.x as x, "
    "B.y as y insert expired events into Out;"
)
BATCH_IN = [("A", 0, ("d", 5)), ("B", 800, ("c", 7)), ("B", 850, ("d", 9)), ("clock", 2400)]


@pytest.mark.parametrize("mode", MODES_32)
def test_a_probed_batch_join_side_keeps_its_stamps_on_expiry_in_32(mode):
    assert run(mode, BATCH_JOIN, BATCH_IN) == [(0, ("d", 5, 7)), (0, ("d", 5, 9))]


def test_a_probed_batch_join_side_fixed_expires_at_the_step():
    assert run("fixed", BATCH_JOIN, BATCH_IN) == [(2400, ("d", 5, 7)), (2400, ("d", 5, 9))]


EARLY = "define stream S (k string);\nfrom S#window.timeBatch(1000, 700) select k insert into Out;"
EARLY_IN = [("S", 50, ("a",)), ("clock", 1150), ("clock", 1800)]


@pytest.mark.parametrize("mode", MODES_32)
def test_timebatch_before_its_start_time_flushes_a_period_late_in_32(mode):
    assert run(mode, EARLY, EARLY_IN) == [(50, ("a",))]  # at the 1800 step (due 1700)
    assert run(mode, EARLY, EARLY_IN[:2]) == []


def test_timebatch_before_its_start_time_fixed_flushes_at_the_aligned_time():
    assert run("fixed", EARLY, EARLY_IN[:2]) == [(50, ("a",))]  # due 700
