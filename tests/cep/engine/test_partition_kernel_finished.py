"""The pattern kernel's expiry bookkeeping (`filed`: start timestamps of partials not yet
dropped; `popped`: the last dropped sequence number; dropped partials swept out of the buckets
in bulk): bounded, and a restore mid-stream gives the uninterrupted output."""

import cep
from cep.engine.partition import kernel as kernel_mod
from cep.engine.runtime import ExecutionPlanRuntime

PLAN = (
    "@Plan:playback\ndefine stream S (sym string, price double);\n"
    "partition with (sym of S) begin from every e1=S -> e2=S[e2.sym == e1.sym and "
    "e2.price > e1.price] within 100 ms select e1.price as p1, e2.price as p2 "
    "insert into O; end;"
)


def kernel_of(rt):
    part = next(p for k, p in rt.ctx.stateful.items() if k.startswith("partition"))
    return part.fast.merged[0]


def test_expiry_bookkeeping_stays_bounded(monkeypatch):
    monkeypatch.setattr(kernel_mod, "ENABLED", True)
    rt = ExecutionPlanRuntime(cep.compile(PLAN))
    got = []
    rt.add_callback("O", got.extend)
    k = kernel_of(rt)
    h = rt.input_handler("S")
    for step in range(20):  # rising prices: every partial completes on its key's next event
        h.send_batch(
            [(1000 + step * 50 + i, (f"K{i % 5}", float(step * 50 + i))) for i in range(50)]
        )
        assert len(k.filed) <= 150 and k.popped + len(k.filed) == k.seq
    assert len(got) == 995


def test_dropped_partials_are_swept_out_of_the_buckets(monkeypatch):
    """Falling prices: nothing completes; the buckets keep about `within` worth of partials
    (the sweep runs once as many have been dropped as were left)."""
    monkeypatch.setattr(kernel_mod, "ENABLED", True)
    monkeypatch.setattr(kernel_mod, "SWEEP_MIN", 64)
    rt = ExecutionPlanRuntime(cep.compile(PLAN))
    k = kernel_of(rt)
    h = rt.input_handler("S")
    for step in range(40):
        h.send_batch(
            [(1000 + step * 50 + i, (f"K{i % 5}", 1e6 - step * 50 - i)) for i in range(50)]
        )
        held = sum(map(len, k.buckets.values()))
        assert held <= 2 * 101 + 64, held
    assert k.pending_count() == 101  # the partials of the last 100 ms (both ends in)


def test_expiry_after_restore_still_drops_completed_and_stale(monkeypatch):
    """After a restore the notes are empty: `_expire` searches the buckets and gives the
    same outputs as an uninterrupted run."""
    monkeypatch.setattr(kernel_mod, "ENABLED", True)
    evs = [(1000 + i * 7, (f"K{i % 3}", float((i * 37) % 101))) for i in range(600)]
    outs = []
    for cut in (None, 300):
        rt = ExecutionPlanRuntime(cep.compile(PLAN))
        got = []
        rt.add_callback("O", got.extend)
        h = rt.input_handler("S")
        h.send_batch(evs[: cut or 600])
        if cut:
            snap = rt.snapshot()
            rt = ExecutionPlanRuntime(cep.compile(PLAN))
            rt.add_callback("O", got.extend)
            rt.restore(snap)
            rt.input_handler("S").send_batch(evs[cut:])
        outs.append(got)
    assert outs[0] and outs[0] == outs[1]
