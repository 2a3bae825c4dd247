"""Every window kind: a batch gives exactly the output of sending its events one at a time,
and a runtime restored from a snapshot, fed the rest, gives exactly the original's output."""

import pytest

from tests.cep.engine.helpers import collect, feed, runtime, run_plan, ticks

WINDOWS = {
    "length": "length(3)",
    "lengthBatch": "lengthBatch(3)",
    "time": "time(2 sec)",
    "timeBatch": "timeBatch(2 sec)",
    "timeBatch-start": "timeBatch(2 sec, 500)",
    "externalTime": "externalTime(ets, 2 sec)",
    "externalTimeBatch": "externalTimeBatch(ets, 2 sec)",
    "externalTimeBatch-timeout": "externalTimeBatch(ets, 3 sec, 0, 1 sec)",
    "timeLength": "timeLength(2 sec, 3)",
    "sort": "sort(3, price)",
    "sort-desc": "sort(3, price, 'desc')",
    "unique": "unique(sym)",
    "firstUnique": "firstUnique(sym)",
    "uniqueExternalTimeBatch": "uniqueExternalTimeBatch(sym, ets, 2 sec)",
    "frequent": "frequent(2, sym)",
    "lossyFrequent": "lossyFrequent(0.3, 0.05, sym)",
    "delay": "delay(1 sec)",
}


def plan(window, pre=""):
    return f"""
    @Plan:playback
    define stream S (sym string, price double, ets long);
    from S{pre}#window.{window}
    select sym, sum(price) as s, count() as c, avg(price) as a, min(price) as lo,
           max(price) as hi, stddev(price) as sd, distinctcount(sym) as dc,
           minForever(price) as mf, maxForever(price) as xf
    group by sym insert all events into G;
    from S{pre}#window.{window} select sum(price) as s, count() as c, max(price) as hi
    insert all events into T;
    from S{pre}#window.{window} select sym, price insert all events into P;
    """


STREAMS = ("G", "T", "P")


@pytest.mark.parametrize("name", sorted(WINDOWS))
def test_batch_equals_one_at_a_time(name):
    items = ticks()
    one = run_plan(plan(WINDOWS[name]), items, STREAMS, batch=1)
    assert sum(map(len, one.values())) > 10, "the workload must produce output"
    for size in (4, 1000):
        assert run_plan(plan(WINDOWS[name]), items, STREAMS, batch=size) == one, size


@pytest.mark.parametrize("name", ["time", "timeBatch", "timeLength", "delay"])
def test_batch_equals_one_at_a_time_with_filter_before_window(name):
    """A filter before the window: its timers split the batches instead of running inline."""
    items = ticks(seed=11)
    text = plan(WINDOWS[name], pre="[price > 3.0]")
    one = run_plan(text, items, STREAMS, batch=1)
    assert run_plan(text, items, STREAMS, batch=50) == one


@pytest.mark.parametrize("name", sorted(WINDOWS))
def test_snapshot_restore_continues_exactly(name):
    # firstUnique only lets new keys through: give the second half some
    items = ticks(
        seed=3,
        syms=tuple("ABCDEFGHIJKLMNOPQRST") if name == "firstUnique" else ("A", "B", "C", "D"),
    )
    whole = run_plan(plan(WINDOWS[name]), items, STREAMS, batch=5)
    cut = len(items) // 2
    first = runtime(plan(WINDOWS[name]))
    got1 = collect(first, STREAMS)
    feed(first, items[:cut], batch=5)
    data = first.snapshot()
    first.shutdown()
    second = runtime(plan(WINDOWS[name]))
    second.restore(data)
    got2 = collect(second, STREAMS)
    feed(second, items[cut:], batch=5)
    second.shutdown()
    assert {s: got1[s] + got2[s] for s in STREAMS} == whole
    assert any(got2.values()), "the restored half must produce output"


def test_time_window_idle_expiry_fires_on_clock_steps():
    rt = runtime("""@Plan:playback
        define stream S (sym string, price double, ets long);
        from S#window.time(1 sec) select count() as c insert all events into O;""")
    got = collect(rt, ["O"])
    rt.input_handler("S").send(("A", 1.0, 0), 1000)
    rt.advance_time(1999)
    assert got["O"] == [(1000, (1,))]
    rt.advance_time(2500)
    assert got["O"] == [(1000, (1,)), (2500, (0,))]


def test_sort_window_orders_by_several_attributes():
    rt = runtime("""@Plan:playback
        define stream S (sym string, price double, ets long);
        from S#window.sort(2, price, 'asc', sym, 'desc') select sym, price
        insert expired events into O;""")
    got = collect(rt, ["O"])
    h = rt.input_handler("S")
    h.send_batch([(1, ("A", 1.0, 0)), (2, ("B", 1.0, 0)), (3, ("C", 1.0, 0))])
    assert got["O"] == [(3, ("A", 1.0))]  # ties on price: 'A' sorts last descending by sym


def test_order_by_and_limit_apply_to_each_flush_or_arrival():
    rt = runtime("""@Plan:playback
        define stream S (sym string, price double, ets long);
        from S#window.lengthBatch(3) select sym, price order by price desc limit 2
        insert into B;
        from S#window.length(1) select sym, price order by price limit 1
        insert all events into L;""")
    got = collect(rt, ["B", "L"])
    rt.input_handler("S").send_batch(
        [(1, ("A", 2.0, 0)), (2, ("B", 9.0, 0)), (3, ("C", 5.0, 0)), (4, ("D", 7.0, 0))]
    )
    assert [r[0] for _, r in got["B"]] == ["B", "C"]
    # each arrival after the first expires the previous event: the cheaper row of the pair
    assert [r[0] for _, r in got["L"]] == ["A", "A", "C", "C"]


def test_cron_window_flushes_on_its_schedule():
    rt = runtime("""@Plan:playback
        define stream S (sym string, price double, ets long);
        from S#window.cron('*/2 * * * * ?') select sum(price) as s insert into O;""")
    got = collect(rt, ["O"])
    rt.input_handler("S").send_batch(
        [(1000, ("A", 1.0, 0)), (1500, ("A", 2.0, 0)), (2500, ("A", 4.0, 0))]
    )
    rt.advance_time(4000)
    assert got["O"] == [(1500, (3.0,)), (2500, (4.0,))]


def test_window_and_function_names_match_past_the_first_letter():
    rt = runtime("""@Plan:playback
        define stream S (sym string, price double, ets long);
        from S#window.Length(2) select Coalesce(price, 0.0) as p, Sum(price) as s
        insert into O;""")
    got = collect(rt, ["O"])
    rt.input_handler("S").send_batch([(1, ("A", 1.0, 0)), (2, ("A", None, 0))])
    assert got["O"] == [(1, (1.0, 1.0)), (2, (0.0, 1.0))]


def test_external_time_batch_timeout_outputs_a_waiting_batch_early():
    rt = runtime("""@Plan:playback
        define stream S (sym string, price double, ets long);
        from S#window.externalTimeBatch(ets, 10 sec, 0, 2 sec) select sum(price) as s
        insert into O;""")
    got = collect(rt, ["O"])
    h = rt.input_handler("S")
    h.send_batch([(1000, ("A", 1.0, 1000)), (1500, ("A", 2.0, 1500))])
    rt.advance_time(3400)
    assert got["O"] == []
    rt.advance_time(3500)  # 2 s after the last arrival: the batch so far, early
    assert got["O"] == [(1500, (3.0,))]
    h.send(("A", 4.0, 4000), 4000)  # restarts the wait: early output again at 6000
    h.send(("A", 8.0, 12000), 12000)  # past the batch end: the whole batch, once more
    assert got["O"] == [(1500, (3.0,)), (4000, (7.0,)), (4000, (7.0,))]
