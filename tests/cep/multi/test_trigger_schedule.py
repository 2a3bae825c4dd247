"""Triggers on the scheduler: at 'start', at every T and cron, on event time (playback)."""

from datetime import datetime, timezone

import pytest

from cep.engine.clock import Scheduler
from cep.engine.trigger import Cron, TriggerRuntime
from cep.errors import InvalidQueryError
from cep.model import TriggerDefinition


def utc_ms(*args):
    return int(datetime(*args, tzinfo=timezone.utc).timestamp()) * 1000


def started(definition, clock=0):
    sched, got = Scheduler(playback=True), []
    if clock is not None:
        sched.set_clock(clock)  # as after a first event at `clock`
    TriggerRuntime(definition, sched, got.extend).start()
    return sched, got


def test_start_trigger_fires_once_at_time_zero_in_playback():
    sched, got = started(TriggerDefinition("Boot", at_start=True))
    sched.advance(10_000)
    assert got == [(0, (0,), 0)]


def test_periodic_trigger_follows_event_time():
    sched, got = started(TriggerDefinition("Tick", every_millis=5000))
    sched.advance(12_000)
    assert [ts for ts, _, _ in got] == [5000, 10000]
    assert all(row == (ts,) for ts, row, _ in got)


def test_periodic_trigger_in_playback_starts_with_the_first_event():
    sched, got = started(TriggerDefinition("Tick", every_millis=5000), clock=None)
    sched.advance(1_000_000)  # first event time
    sched.advance(1_011_000)
    assert [ts for ts, _, _ in got] == [1_005_000, 1_010_000]


def test_non_positive_period_is_rejected():
    with pytest.raises(InvalidQueryError, match="positive"):
        TriggerRuntime(TriggerDefinition("T", every_millis=0), Scheduler(playback=True), print)


def test_cron_trigger_every_ten_seconds():
    base = utc_ms(2026, 1, 1, 0, 0, 3)
    sched, got = Scheduler(playback=True), []
    sched.set_clock(base)
    TriggerRuntime(TriggerDefinition("C", cron="*/10 * * * * ?"), sched, got.extend).start()
    sched.advance(base + 25_000)
    assert [ts for ts, _, _ in got] == [utc_ms(2026, 1, 1, 0, 0, 10), utc_ms(2026, 1, 1, 0, 0, 20)]


@pytest.mark.parametrize(
    "expr, after, want",
    [
        ("0 0 12 * * ?", (2026, 3, 1, 13, 0, 0), (2026, 3, 2, 12, 0, 0)),
        ("0 15 10 ? * MON-FRI", (2026, 11, 21, 0, 0, 0), (2026, 11, 23, 10, 15, 0)),  # Sat -> Mon
        ("0 0 0 1 JAN ?", (2026, 5, 5, 0, 0, 0), (2027, 1, 1, 0, 0, 0)),
        ("30 9 * * *", (2026, 1, 1, 9, 30, 0), (2026, 1, 2, 9, 30, 0)),  # 5-field unix form
    ],
)
def test_cron_next_after(expr, after, want):
    assert Cron(expr).next_after(utc_ms(*after)) == utc_ms(*want)


@pytest.mark.parametrize(
    "expr, why", [("* * *", "fields"), ("0 61 * * * ?", "outside"), ("0 x * * * ?", "not a number")]
)
def test_bad_cron_is_rejected_with_the_reason(expr, why):
    with pytest.raises(InvalidQueryError, match=why):
        Cron(expr)


def test_restore_rearms_the_next_firing():
    sched, got = started(TriggerDefinition("Tick", every_millis=5000))
    sched.advance(6000)
    state = TriggerRuntime.get_state(_only_trigger(sched))
    fresh, again = Scheduler(playback=True), []
    t = TriggerRuntime(TriggerDefinition("Tick", every_millis=5000), fresh, again.extend)
    t.set_state(state)
    fresh.advance(11_000)
    assert [ts for ts, _, _ in again] == [10000]


def _only_trigger(sched):
    (entry,) = sched._heap
    return entry[2].__self__
