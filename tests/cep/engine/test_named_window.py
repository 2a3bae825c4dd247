"""Named windows (`define window`): one shared instance per plan, its readers (queries, joins,
patterns), its snapshot, and the compiler's positioned errors. Outputs against the real Siddhi
are in tests/conformance/cases/window/."""

import pytest

import cep
from cep.errors import InvalidQueryError, SiddhiQLError, UnknownWindowError
from tests.cep.engine.helpers import collect, feed, runtime

HEAD = "@Plan:playback\ndefine stream S (k string, i int);\ndefine stream T (k string, j int);\n"


def run(body, items, outs=("Out",)):
    rt = runtime(HEAD + body)
    got = collect(rt, list(outs))
    feed(rt, items)
    rt.shutdown()
    return got


def test_the_definition_is_in_the_plan_and_not_a_stream():
    plan = cep.compile(
        HEAD + "define window W (k string, i int) time(2 sec) "
        "output expired events;\nfrom S select * insert into W;"
    )
    (w,) = plan.windows
    assert (w.id, w.window.name, w.output_event_type) == ("W", "time", "expired")
    assert plan.window("W") is w and "W" not in {s.id for s in plan.streams}


def test_two_readers_share_one_window():
    """Both readers see the same expiries: the window is not built once per reader."""
    body = (
        "define window W (k string, i int) length(2);\n"
        "from S select * insert into W;\n"
        "from W select k, sum(i) as s insert into A;\n"
        "from W select k, count() as c insert into B;"
    )
    got = run(
        body, [("S", 1000, ("a", 1)), ("S", 1100, ("b", 2)), ("S", 1200, ("c", 4))], ("A", "B")
    )
    assert [r for _, r in got["A"]] == [("a", 1), ("b", 3), ("c", 6)]
    assert [r for _, r in got["B"]] == [("a", 1), ("b", 2), ("c", 2)]


def test_a_join_looks_into_the_rows_the_window_holds():
    body = (
        "define window W (k string, i int) length(2);\n"
        "from S select * insert into W;\n"
        "from T join W on T.k == W.k select T.j as j, W.i as i insert into Out;"
    )
    got = run(
        body,
        [
            ("S", 1000, ("a", 1)),
            ("S", 1100, ("b", 2)),
            ("T", 1150, ("a", 7)),
            ("S", 1200, ("c", 4)),
            ("T", 1250, ("a", 8)),
            ("T", 1260, ("c", 9)),
        ],
    )
    assert [r for _, r in got["Out"]] == [(7, 1), (9, 4)]  # a left the window at 1200


def test_a_pattern_reads_the_rows_arriving_in_the_window_not_its_expiries():
    body = (
        "define window W (k string, i int) length(1);\n"
        "from S select * insert into W;\n"
        "from every e1=W -> e2=T[k == e1.k] select e1.i as i, e2.j as j insert into Out;"
    )
    got = run(
        body,
        [
            ("S", 1000, ("a", 1)),
            ("S", 1100, ("b", 2)),
            ("T", 1200, ("a", 7)),
            ("T", 1300, ("b", 8)),
        ],
    )
    assert [r for _, r in got["Out"]] == [(1, 7), (2, 8)]


def test_the_window_survives_a_snapshot():
    text = HEAD + (
        "define window W (k string, i int) time(1 sec);\n"
        "from S select * insert into W;\n"
        "from W select k, sum(i) as s insert all events into Out;\n"
        "from T join W on T.k == W.k select T.j as j, W.i as i insert into J;"
    )
    rt = runtime(text)
    feed(rt, [("S", 1000, ("a", 1)), ("S", 1500, ("b", 2))])
    state = rt.snapshot()
    rt.shutdown()
    rt2 = runtime(text)
    rt2.restore(state)
    got = collect(rt2, ["Out", "J"])
    feed(rt2, [("T", 1600, ("b", 5)), ("clock", 2100), ("S", 2600, ("c", 4))])
    rt2.shutdown()
    assert got["J"] == [(1600, (5, 2))]  # the join sees the restored rows
    # as Siddhi without the snapshot: a expires when the clock passes 2000 (its timer was
    # restored), b when c arrives
    assert got["Out"] == [(2100, ("a", 2)), (2600, ("b", 0)), (2600, ("c", 4))]


ERRORS = [
    (
        "define window W (k string, i int) length(2);\nfrom S select * insert into W;\n"
        "from W#window.length(1) select k insert into Out;",
        InvalidQueryError,
        "cannot add another window",
        6,
    ),
    (
        "define window W (k string, i int) length(2);\nfrom S select * insert into W;\n"
        "from T join W[i > 1] on T.k == W.k select T.j insert into Out;",
        InvalidQueryError,
        "filter",
        6,
    ),
    (
        "define window W (k string, i int) length(2);\n"
        "partition with (k of W) begin from W select k insert into Out; end;",
        InvalidQueryError,
        "partition",
        5,
    ),
    (
        "define window W (k string, i int) length(2);\n"
        "partition with (k of S) begin from W select k insert into Out; end;",
        InvalidQueryError,
        "partition",
        5,
    ),
    ("define window W (k string, i int) lenght(2);", UnknownWindowError, "lenght", 4),
    ("define window W (k string, i int) length('x');", SiddhiQLError, "length", 4),
    (
        "define window W (k string, i int) length(2);\nfrom S select k insert into W;",
        SiddhiQLError,
        "W",
        5,
    ),
    (
        "define window W (k string, i int) length(2);\ndefine stream W (k string);",
        SiddhiQLError,
        "twice",
        5,
    ),
]


@pytest.mark.parametrize("body, error, words, line", ERRORS)
def test_bad_window_plans_are_refused_with_their_position(body, error, words, line):
    with pytest.raises(error) as info:
        cep.compile(HEAD + body)
    assert words in str(info.value) and info.value.line == line, str(info.value)


@pytest.mark.parametrize("batch", [2, 7, 50])
def test_the_output_does_not_depend_on_how_the_input_was_batched(batch):
    """Readers select per chunk the window emits; the window takes arrivals one by one."""
    from tests.cep.engine.helpers import ticks

    text = (
        "@Plan:playback\ndefine stream S (sym string, price double, ets long);\n"
        "define window W (sym string, price double) time(2 sec);\n"
        "define window B (sym string, price double) lengthBatch(3);\n"
        "define window TB (sym string, price double) timeBatch(1 sec);\n"
        "from S select sym, price insert into W;\nfrom S select sym, price insert into B;\n"
        "from W select sym, sum(price) as s insert all events into O1;\n"
        "from B select sym, count() as c insert all events into O2;\n"
        "from S select sym, price insert into TB;\n"
        "from TB select sym, avg(price) as a insert all events into O3;"
    )
    outs = ["O1", "O2", "O3"]

    def go(b):
        rt = runtime(text)
        got = collect(rt, outs)
        feed(rt, ticks(), b)
        rt.shutdown()
        return got

    one = go(1)
    assert all(one[o] for o in outs)
    assert go(batch) == one
