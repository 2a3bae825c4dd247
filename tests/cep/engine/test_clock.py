"""The scheduler: rank then due order, the clock step as `now`, owned timers, wall-clock
thread."""

import threading

from cep.engine.clock import Scheduler


def test_playback_fires_due_timers_in_order_with_the_step_time():
    s = Scheduler(playback=True)
    fired = []
    s.notify_at(3000, lambda now: fired.append(("b", now)))
    s.notify_at(1000, lambda now: fired.append(("a", now)))
    s.notify_at(9000, lambda now: fired.append(("c", now)))
    s.advance(5000)
    assert fired == [("a", 5000), ("b", 5000)]
    assert s.now() == 5000 and s.pending() == 1


def test_the_playback_clock_never_goes_back():
    s = Scheduler(playback=True)
    s.advance(5000)
    s.advance(100)
    s.set_clock(200)
    assert s.now() == 5000


def test_next_due_skips_timers_owned_by_a_stream():
    s = Scheduler(playback=True)
    s.notify_at(1000, lambda now: None, owner="S")
    s.notify_at(2000, lambda now: None)
    assert s.next_due() == 1000
    assert s.next_due(skip_owner="S") == 2000
    assert s.next_due(skip_owner="T") == 1000


def test_a_timer_registered_while_firing_fires_in_the_same_step_when_due():
    s = Scheduler(playback=True)
    fired = []

    def first(now):
        fired.append(now)
        s.notify_at(1500, lambda n: fired.append(("again", n)))

    s.notify_at(1000, first)
    s.advance(2000)
    assert fired == [2000, ("again", 2000)]


def test_wall_clock_timers_fire_on_the_thread_under_the_lock():
    lock = threading.RLock()
    s = Scheduler(playback=False, lock=lock)
    done = threading.Event()
    held = []

    def fire(now):
        held.append(lock._is_owned())
        done.set()

    s.notify_at(s.now() + 50, fire)
    assert done.wait(3)
    s.stop()
    assert held == [True]


def test_state_keeps_the_clock_and_drops_timers():
    s = Scheduler(playback=True)
    s.advance(1234)
    s.notify_at(5000, lambda now: None)
    t = Scheduler(playback=True)
    t.notify_at(10, lambda now: None)
    t.set_state(s.get_state())
    assert t.now() == 1234 and t.pending() == 0


def test_a_step_fires_timers_by_rank_before_due_time():
    # Siddhi 3.2: each timed processor's scheduler fires all its due timers, the schedulers
    # in creation order (a join's left window before its right one)
    s = Scheduler(playback=True)
    left, right = s.new_rank(), s.new_rank()
    limiter = s.new_rank(1)
    assert left < right < limiter
    fired = []
    s.notify_at(3300, lambda now: fired.append("right"), rank=right)
    s.notify_at(3900, lambda now: fired.append("limiter"), rank=limiter)
    s.notify_at(3800, lambda now: fired.append("left 3800"), rank=left)
    s.notify_at(3000, lambda now: fired.append("left 3000"), rank=left)
    s.advance(4800)
    assert fired == ["left 3000", "left 3800", "right", "limiter"]


def test_a_timer_set_during_a_step_for_an_earlier_rank_waits_for_the_next_step():
    s = Scheduler(playback=True)
    early, late = s.new_rank(), s.new_rank()
    fired = []

    def from_late(now):
        fired.append(("late", now))
        s.notify_at(now, lambda n: fired.append(("early again", n)), rank=early)
        s.notify_at(now, lambda n: fired.append(("late again", n)), rank=late)

    s.notify_at(1000, from_late, rank=late)
    s.advance(2000)
    assert fired == [("late", 2000), ("late again", 2000)] and s.pending() == 1
    s.advance(2000)
    assert fired[-1] == ("early again", 2000) and s.pending() == 0


def test_a_raising_timer_leaves_the_rest_of_its_step_pending():
    s = Scheduler(playback=True)
    fired = []

    def boom(now):
        raise ValueError("boom")

    s.notify_at(1000, boom, rank=s.new_rank())
    s.notify_at(1000, lambda now: fired.append(now), rank=s.new_rank())
    try:
        s.advance(1500)
    except ValueError:
        pass
    assert fired == [] and s.pending() == 1
    s.advance(1600)
    assert fired == [1600]
