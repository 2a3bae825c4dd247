"""The runtime API: input checking, callbacks, wall-clock time, snapshots, errors."""

import time

import pytest

from cep.errors import EventError, SnapshotError, UnknownInputStreamError
from tests.cep.engine.helpers import collect, runtime

PLAN = """{playback}
define stream S (sym string, price double, vol long, n int, ok bool, f float);
from S[price > 10.0] select sym, price, vol insert into Big;
from S#window.length(2) select sum(vol) as v insert into Sums;"""


def make(playback="@Plan:playback"):
    rt = runtime(PLAN.format(playback=playback))
    return rt, collect(rt, ["Big", "Sums"])


def test_a_bad_event_is_rejected_and_its_neighbours_are_processed():
    rt, got = make()
    bad = rt.input_handler("S").send_batch(
        [
            (1, ("A", 11.0, 1, 1, True, 1.0)),
            (2, ("B", "twelve", 1, 1, True, 1.0)),
            (3, ("C", 13.0, 1)),
            (4, ("D", 14.0, 2, 1, True, 1.0)),
        ]
    )
    assert [i for i, _ in bad] == [1, 2]
    assert "price" in str(bad[0][1]) and "str" in str(bad[0][1])
    assert "6 attributes" in str(bad[1][1])
    assert [r[0] for _, r in got["Big"]] == ["A", "D"]


def test_values_are_coerced_to_the_definition():
    rt, got = make()
    rt.input_handler("S").send(("A", 12, 7.0, 3, False, 0.1), 5)
    assert got["Big"] == [(5, ("A", 12.0, 7))]
    assert isinstance(got["Big"][0][1][1], float)


@pytest.mark.parametrize(
    "row, word",
    [
        (("A", 1.0, 1, 2**31, True, 1.0), "range"),
        (("A", 1.0, 1, 1, "yes", 1.0), "bool"),
        ((1, 1.0, 1, 1, True, 1.0), "string"),
    ],
)
def test_send_raises_a_named_event_error(row, word):
    rt, _ = make()
    with pytest.raises(EventError, match=word):
        rt.input_handler("S").send(row, 1)


def test_unknown_stream():
    rt, _ = make()
    with pytest.raises(UnknownInputStreamError, match="Nope"):
        rt.input_handler("Nope")


def test_snapshot_errors():
    rt, _ = make()
    with pytest.raises(SnapshotError, match="header"):
        rt.restore(b"garbage")
    data = bytearray(rt.snapshot())
    data[7] = 99
    with pytest.raises(SnapshotError, match="version 99"):
        rt.restore(bytes(data))
    other = runtime("define stream S (a int); from S#window.length(3) select a insert into O;")
    with pytest.raises(SnapshotError, match="another plan"):
        rt.restore(other.snapshot())


def test_wall_clock_time_window_expires_on_the_timer_thread():
    rt = runtime("""define stream S (a int);
        from S#window.time(150 milliseconds) select count() as c insert all events into O;""")
    got = collect(rt, ["O"])
    rt.input_handler("S").send((1,))
    deadline = time.time() + 3
    while len(got["O"]) < 2 and time.time() < deadline:
        time.sleep(0.02)
    rt.shutdown()
    assert [r for _, r in got["O"]] == [(1,), (0,)]


def test_insert_expired_events_into_chained_stream_become_current():
    rt = runtime("""@Plan:playback
        define stream S (a int);
        from S#window.length(1) select a insert expired events into E;
        from E select a, count() as c insert into O;""")
    got = collect(rt, ["O"])
    rt.input_handler("S").send_batch([(1, (1,)), (2, (2,)), (3, (3,))])
    assert got["O"] == [(2, (1, 1)), (3, (2, 2))]


def test_multi_stream_queries_dispatch_to_their_builders():
    rt = runtime("""@Plan:playback
        define stream A (k int); define stream B (k int);
        from A#window.length(1) join B#window.length(1) on A.k == B.k
        select A.k as k insert into O;""")
    got = collect(rt, ["O"])
    rt.input_handler("A").send((7,), 1000)
    rt.input_handler("B").send((7,), 1001)
    rt.shutdown()
    assert got["O"] == [(1001, (7,))]


def test_batches_with_nulls_lists_and_ints_for_doubles_are_accepted():
    rt, got = make()
    bad = rt.input_handler("S").send_batch(
        [(1, ["A", 11, None, None, None, None]), (2, ("B", 12.5, 3, 1, True, 0.5))]
    )
    assert bad == []
    assert got["Big"] == [(1, ("A", 11.0, None)), (2, ("B", 12.5, 3))]
    assert got["Sums"] == [(1, (0,)), (2, (3,))]


def test_events_without_timestamps_take_the_runtime_clock():
    rt, got = make()
    rt.advance_time(7000)
    bad = rt.input_handler("S").send_batch(
        [(None, ("A", 11.0, 1, 1, True, 1.0)), (None, ("B", 12.0, 2, 1, True, 1.0))]
    )
    assert bad == [] and [t for t, _ in got["Big"]] == [7000, 7000]
    rt2, got2 = make(playback="")
    before = int(time.time() * 1000)
    rt2.input_handler("S").send_batch([(None, ("A", 11.0, 1, 1, True, 1.0))])
    rt2.shutdown()
    assert before <= got2["Big"][0][0] <= int(time.time() * 1000)


def test_wall_clock_time_batch_flushes_on_the_timer_thread():
    rt = runtime("""define stream S (a int);
        from S#window.timeBatch(100 milliseconds) select sum(a) as s insert into O;""")
    got = collect(rt, ["O"])
    rt.input_handler("S").send_batch([(None, (1,)), (None, (2,))])
    assert got["O"] == []
    deadline = time.time() + 3
    while not got["O"] and time.time() < deadline:
        time.sleep(0.02)
    rt.shutdown()
    assert [r for _, r in got["O"]] == [(3,)]


def test_a_runtime_is_built_from_a_hand_made_model_without_plan_text():
    from cep.engine.runtime import ExecutionPlanRuntime
    from cep.model import (
        Annotation,
        Attribute,
        AttrType,
        CompareOp,
        Constant,
        ExecutionPlan,
        Filter,
        FunctionCall,
        InsertInto,
        OutputAttribute,
        Query,
        Selector,
        SingleInputStream,
        StreamDefinition,
        Variable,
        Window,
    )

    s = StreamDefinition("S", (Attribute("sym", AttrType.STRING), Attribute("p", AttrType.DOUBLE)))
    out = StreamDefinition(
        "O", (Attribute("sym", AttrType.STRING), Attribute("t", AttrType.DOUBLE))
    )
    q = Query(
        SingleInputStream(
            "S",
            (
                Filter(CompareOp(">", Variable("p"), Constant(1.0, AttrType.DOUBLE))),
                Window("length", (Constant(2, AttrType.INT),)),
            ),
        ),
        Selector(
            (
                OutputAttribute("sym", Variable("sym")),
                OutputAttribute("t", FunctionCall("sum", (Variable("p"),))),
            )
        ),
        InsertInto("O"),
    )
    plan = ExecutionPlan(
        annotations=(Annotation("playback", "Plan"),), streams=(s, out), elements=(q,)
    )
    rt = ExecutionPlanRuntime(plan)
    got = collect(rt, ["O"])
    rt.input_handler("S").send_batch(
        [(1, ("A", 2.0)), (2, ("B", 0.5)), (3, ("C", 3.0)), (4, ("D", 4.0))]
    )
    assert got["O"] == [(1, ("A", 2.0)), (3, ("C", 5.0)), (4, ("D", 7.0))]
