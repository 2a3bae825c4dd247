"""Shared by the pattern-kernel property tests: hypothesis batches of (step, row) made into
timed events, and events as send_columns' masked columns (None -> masked)."""

import numpy as np


def timed(batches):
    """[(events, mode)] of (step, (sym, price, vol)) -> [(mode, [(ts, row)])]: time moves on by
    each non-negative step; a negative step is one event from the past (time does not move)."""
    t, out = 1000, []
    for events, mode in batches:
        evs = []
        for step, row in events:
            t = max(t + step, 0) if step >= 0 else t
            evs.append((t + min(step, 0), row))
        out.append((mode, evs))
    return out


def columns(events):
    """(data, timestamps) for send_columns from [(ts, (sym, price, vol))]."""
    sym = np.empty(len(events), object)
    sym[:] = [r[0] for _, r in events]
    price = np.ma.masked_array(
        [0.0 if r[1] is None else r[1] for _, r in events], [r[1] is None for _, r in events]
    )
    vol = np.ma.masked_array(
        [0 if r[2] is None else r[2] for _, r in events], [r[2] is None for _, r in events]
    )
    return {"sym": sym, "price": price, "vol": vol}, np.array([t for t, _ in events])


def feed(rt, fresh, batches, restore_at=None):
    """Send timed batches to `rt`, rows or columns as each batch's mode says; before batch
    `restore_at`, snapshot, make a new runtime with fresh() and restore it. No event may be
    rejected. Returns the runtime in use at the end."""
    for i, (mode, events) in enumerate(batches):
        if i == restore_at:
            state = rt.snapshot()
            rt = fresh()
            rt.restore(state)
        h = rt.input_handler("S")
        bad = h.send_batch(events) if mode == "rows" else h.send_columns(*columns(events))
        assert bad == []
    return rt


HEAD = "@Plan:playback\ndefine stream S (sym string, price double, vol long);\n"


def recording(text):
    """(fresh, got): fresh() makes a runtime of `text` whose stream O's events are appended to
    got (as repr), one list for every runtime made."""
    import cep

    got = []

    def fresh():
        rt = cep.ExecutionPlanRuntime(cep.compile(text))
        rt.add_callback("O", lambda evs: got.extend(repr(e) for e in evs))
        return rt

    return fresh, got
