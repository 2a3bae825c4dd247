"""Output rate limiting: event counts, and time periods on event time in playback."""

import pytest

from tests.cep.engine.helpers import collect, feed, runtime

PLAN = """@Plan:playback
define stream S (sym string, n int);
from S{window} select sym, {select} {group} output {rate} insert {kind} into O;"""


def run(rate, select="n", group="", window="", kind="", batch=1, items=None):
    rt = runtime(
        PLAN.format(
            rate=rate,
            select=select,
            group=group,
            window=window,
            kind=kind + (" events" if kind else ""),
        )
    )
    got = collect(rt, ["O"])
    items = items or [("S", 1000 + 400 * i, ("AB"[i % 3 == 0], i)) for i in range(12)]
    feed(rt, items, batch)
    rt.shutdown()
    return got["O"]


@pytest.mark.parametrize("batch", [1, 5])
def test_all_every_time_releases_each_period_on_event_time(batch):
    out = run("every 1 sec", batch=batch)
    # periods from the first event: [1000, 2000) released at 2000, [2000, 3000) at 3000, ...
    assert [r[1] for _, r in out] == list(range(10))


@pytest.mark.parametrize("batch", [1, 5])
def test_first_every_time(batch):
    out = run("first every 1 sec", batch=batch)
    assert [r[1] for _, r in out] == [0, 3, 5, 8, 10]


@pytest.mark.parametrize("batch", [1, 5])
def test_last_every_time(batch):
    out = run("last every 1 sec", batch=batch)
    assert [r[1] for _, r in out] == [2, 4, 7, 9]


def test_last_every_time_per_group():
    out = run("last every 2 sec", select="sum(n) as t", group="group by sym")
    # period [1000, 3000): events 0..4 (i % 3 == 0 is B); B = 0+3, A = 1+2+4, in first-appearance order
    assert [r for _, r in out[:2]] == [("B", 3), ("A", 7)]


def test_snapshot_every_time_of_a_window():
    out = run("snapshot every 1 sec", window="#window.length(2)")
    # at 2000 the window holds events 1 and 2; at 3000 events 3 and 4 ...
    assert [r[1] for _, r in out[:4]] == [1, 2, 3, 4]


def test_snapshot_every_time_of_an_aggregate_per_group():
    out = run("snapshot every 2 sec", select="count() as c", group="group by sym")
    assert [r for _, r in out[:2]] == [("B", 2), ("A", 3)]


def test_time_rate_limit_fires_on_clock_steps_without_events():
    out = run("every 1 sec", items=[("S", 1000, ("A", 1)), ("clock", 5000)])
    assert out == [(1000, ("A", 1))]


def test_first_every_events_per_group_restarts_each_period():
    out = run("first every 3 events", group="group by sym")
    assert [r[1] for _, r in out] == [0, 1, 3, 4, 6, 7, 9, 10]


@pytest.mark.parametrize(
    "rate",
    [
        "every 1 sec",
        "last every 1 sec",
        "first every 3 events",
        "last every 4 events",
        "snapshot every 1 sec",
    ],
)
def test_snapshot_restore_of_rate_limiters(rate):
    items = [("S", 1000 + 300 * i, ("AB"[i % 3 == 0], i)) for i in range(30)]
    text = PLAN.format(rate=rate, select="sum(n) as t", group="group by sym", window="", kind="")
    whole = collect(first := runtime(text), ["O"])
    feed(first, items, 4)
    a = runtime(text)
    got_a = collect(a, ["O"])
    feed(a, items[:13], 4)
    b = runtime(text)
    b.restore(a.snapshot())
    got_b = collect(b, ["O"])
    feed(b, items[13:], 4)
    assert got_a["O"] + got_b["O"] == whole["O"] and got_b["O"]


def test_time_rate_limit_on_the_wall_clock():
    import time as _time

    rt = runtime("""define stream S (sym string, n int);
        from S select sym, n output every 100 milliseconds insert into O;""")
    got = collect(rt, ["O"])
    rt.input_handler("S").send_batch([(None, ("A", 1)), (None, ("A", 2))])
    assert got["O"] == []  # buffered until the period ends
    deadline = _time.time() + 3
    while not got["O"] and _time.time() < deadline:
        _time.sleep(0.02)
    rt.shutdown()
    assert [r for _, r in got["O"]] == [("A", 1), ("A", 2)]
