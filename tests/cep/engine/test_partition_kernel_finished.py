"""The pattern kernel's `finished` notes (partials that completed, so `_expire` skips them
without searching their bucket): bounded by the expiry queue, dropped on restore."""
import cep
from cep.engine.partition import kernel as kernel_mod
from cep.engine.runtime import ExecutionPlanRuntime

PLAN = ("@Plan:playback\ndefine stream S (sym string, price double);\n"
        "partition with (sym of S) begin from every e1=S -> e2=S[e2.sym == e1.sym and "
        "e2.price > e1.price] within 100 ms select e1.price as p1, e2.price as p2 "
        "insert into O; end;")


def kernel_of(rt):
    part = next(p for k, p in rt.ctx.stateful.items() if k.startswith("partition"))
    return part.fast.merged[0]


def test_finished_notes_stay_within_the_expiry_queue(monkeypatch):
    monkeypatch.setattr(kernel_mod, "ENABLED", True)
    rt = ExecutionPlanRuntime(cep.compile(PLAN))
    got = []
    rt.add_callback("O", got.extend)
    k = kernel_of(rt)
    h = rt.input_handler("S")
    for step in range(20):  # rising prices: every partial completes on its key's next event
        h.send_batch([(1000 + step * 50 + i, (f"K{i % 5}", float(step * 50 + i)))
                      for i in range(50)])
        assert k.finished <= {e[0] for e in k.expiry}
    assert len(got) == 995 and len(k.finished) <= 110
    state = rt.snapshot()
    rt.restore(state)
    assert kernel_of(rt).finished == set()


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
        h.send_batch(evs[:cut or 600])
        if cut:
            snap = rt.snapshot()
            rt = ExecutionPlanRuntime(cep.compile(PLAN))
            rt.add_callback("O", got.extend)
            rt.restore(snap)
            rt.input_handler("S").send_batch(evs[cut:])
        outs.append(got)
    assert outs[0] and outs[0] == outs[1]
