"""A partition fed key by key, each key's run on its own playback clock (cep backtest: advance
to the end, then `restore_clock(None)`): the pattern kernel's waiting partials of a key whose
run has ended are gone once the next key starts, the output is that of each key run alone,
and a live (never restarted) clock keeps them as before. The partition clock ranks each
instance's timers after the plan's, in instance creation order."""

import random

import cep
from cep.engine.clock import Scheduler
from cep.engine.partition import kernel as kernel_mod
from cep.engine.partition.clock import PartitionScheduler
from cep.engine.runtime import ExecutionPlanRuntime

PLAN = (
    "@Plan:playback\ndefine stream S (sym string, price double);\n"
    "partition with (sym of S) begin from every e1=S -> e2=S[price > e1.price * 1.05] "
    "within 100 ms select e1.sym as sym, e1.price as p1, e2.price as p2 "
    "insert into O; end;"
)
WINDOW = (
    "@Plan:playback\ndefine stream S (sym string, price double);\n"
    "partition with (sym of S) begin from S#window.time(100 ms) select sym, "
    "sum(price) as total, count() as n insert into O; end;"
)
END = 10_000


def kernel_of(rt):
    part = next(p for k, p in rt.ctx.stateful.items() if k.startswith("partition"))
    return part.fast.merged[0]


def runs(keys=30, per_key=40, seed=3):
    """{key: [(ts, row)]}: each key over the same span, so an earlier key's late partials
    are younger than the next key's first events."""
    rnd = random.Random(seed)
    out = {}
    for i in range(keys):
        ts = sorted(rnd.sample(range(1000, 5000), per_key))
        out[f"K{i}"] = [(t, (f"K{i}", 100 * rnd.uniform(0.9, 1.1))) for t in ts]
    return out


def feed(plan, by_key, each=None):
    """The key-by-key feed; `each(rt)` after every key's batch; the output rows."""
    rt = ExecutionPlanRuntime(cep.compile(plan))
    got = []
    rt.add_callback("O", lambda evs: got.extend((t, tuple(r)) for t, r in evs))
    h = rt.input_handler("S")
    for i, events in enumerate(by_key.values()):
        if i:
            rt.advance_time(END)
            rt.scheduler.restore_clock(None)
        assert not h.send_batch(events)
        if each is not None:
            each(rt)
    rt.advance_time(END)
    rt.shutdown()
    return got


def alone(plan, by_key):
    """Each key in its own runtime: the output the key-by-key feed must give."""
    got = []
    for events in by_key.values():
        got += feed(plan, {0: events})
    return got


def test_an_ended_keys_partials_leave_when_the_next_key_starts(monkeypatch):
    monkeypatch.setattr(kernel_mod, "ENABLED", True)
    by_key = runs()
    left = []

    def check(rt):
        k = kernel_of(rt)
        key = next(iter(by_key)) if not left else list(by_key)[len(left)]
        waiting = [e for b in k.buckets.values() for e in b if e[1] > k.popped]
        assert {e[3][0] for e in waiting} <= {key}  # only the running key's partials
        assert k.pending_count() == len(waiting)
        assert len(k.filed) <= len(by_key[key])
        left.append(len(waiting))

    got = feed(PLAN, by_key, check)
    assert max(left) > 0 and len(left) == len(by_key)
    assert got == alone(PLAN, by_key)


def test_key_by_key_output_equals_the_general_machine(monkeypatch):
    by_key = runs(keys=20, seed=8)
    monkeypatch.setattr(kernel_mod, "ENABLED", True)
    fast = feed(PLAN, by_key)
    monkeypatch.setattr(kernel_mod, "ENABLED", False)
    assert fast and fast == feed(PLAN, by_key)


def test_a_live_clock_keeps_its_partials(monkeypatch):
    """Never restarted: every key's partials stay where they did (filing-order cut)."""
    monkeypatch.setattr(kernel_mod, "ENABLED", True)
    rt = ExecutionPlanRuntime(cep.compile(PLAN))
    h = rt.input_handler("S")
    h.send_batch([(1000 + i, (f"K{i % 3}", 100.0 - i)) for i in range(30)])  # nothing completes
    rt.advance_time(1050)  # no restart: nothing of the kernel changes
    k = kernel_of(rt)
    assert rt.scheduler.restarts == 0 and k.pending_count() == 30 and k.popped == 0
    got = []
    rt.add_callback("O", got.extend)
    h.send_batch([(1060, ("K0", 200.0))])  # completes K0's 10 partials, all within 100 ms
    assert len(got) == 10


def test_a_restart_snapshot_restores_to_the_same_output(monkeypatch):
    monkeypatch.setattr(kernel_mod, "ENABLED", True)
    by_key = runs(keys=6, seed=5)
    keys = list(by_key)
    rt = ExecutionPlanRuntime(cep.compile(PLAN))
    got = []
    rt.add_callback("O", lambda evs: got.extend((t, tuple(r)) for t, r in evs))
    h = rt.input_handler("S")
    for i, key in enumerate(keys[:3]):
        if i:
            rt.advance_time(END)
            rt.scheduler.restore_clock(None)
        h.send_batch(by_key[key])
    events = by_key[keys[3]]
    rt.advance_time(END)
    rt.scheduler.restore_clock(None)
    h.send_batch(events[:20])
    state = rt.snapshot()
    assert {e[3][0] for b in kernel_of(rt).buckets.values() for e in b} <= {keys[3]}
    rt2 = ExecutionPlanRuntime(cep.compile(PLAN))
    rt2.restore(state)
    assert kernel_of(rt2).pending_count() == kernel_of(rt).pending_count() > 0
    before, outs = list(got), []
    for r in (rt, rt2):
        out = []
        r.add_callback("O", lambda evs, out=out: out.extend((t, tuple(x)) for t, x in evs))
        r.input_handler("S").send_batch(events[20:])
        outs.append(out)
    assert outs[0] == outs[1] and outs[0] == [
        x for x in alone(PLAN, {0: events}) if x not in before
    ]


def test_time_window_output_and_timers_over_a_key_by_key_feed():
    by_key = runs(keys=15, per_key=30, seed=11)
    got = feed(WINDOW, by_key)
    assert len(got) == 15 * 30 and got == alone(WINDOW, by_key)


def test_a_restart_is_counted_only_from_a_running_clock():
    s = Scheduler(playback=True)
    s.restore_clock(None)  # not started yet: no restart
    s.advance(100)
    s.restore_clock(50)  # a batch window putting the clock back: no restart
    assert s.restarts == 0
    s.restore_clock(None)
    assert s.restarts == 1 and s.clock is None


def test_instance_timers_fire_after_the_plans_in_creation_order_and_clear_voids_them():
    real = Scheduler(playback=True)
    clock = PartitionScheduler(real)
    fired = []
    first, second = clock.new_instance(), clock.new_instance()
    rank = real.new_rank()
    clock.current = second
    clock.notify_at(10, lambda now: fired.append("second"), rank=rank)
    clock.current = first
    clock.notify_at(30, lambda now: fired.append("first"), rank=rank)
    real.notify_at(40, lambda now: fired.append("plan"), rank=real.new_rank())
    real.advance(50)
    assert fired == ["plan", "first", "second"]
    clock.notify_at(60, lambda now: fired.append("stale"), rank=rank)
    clock.clear()
    real.advance(70)
    assert fired == ["plan", "first", "second"] and real.pending() == 0


def test_the_general_machine_starts_afresh_when_the_next_key_starts(monkeypatch):
    monkeypatch.setattr(kernel_mod, "ENABLED", False)
    by_key = runs(keys=12, seed=4)
    sizes = []

    def check(rt):
        m = kernel_of(rt)
        assert type(m).__name__ == "StateMachine"
        sizes.append(len(m.expiry))
        key = list(by_key)[len(sizes) - 1]
        assert all(p[0][0] == key for _, _, _, p in m.expiry)  # only the running key's

    got = feed(PLAN, by_key, check)
    assert max(sizes) > 0 and got == alone(PLAN, by_key)
