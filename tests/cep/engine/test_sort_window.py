"""#window.sort keeps its items sorted once full and places each newcomer by binary search;
its output must stay what a stable sort of the items plus the newcomer gives (Siddhi 3.2's
Collections.sort), with ties, nulls, NaN, descending parts, any batch cut and snapshots."""

import math
import random

import pytest

import cep
from cep.engine.windows.keyed import _Desc


def _model(events, n, parts):
    """The window by its definition: append; over n items, stable-sort them all by the key
    and expire the last. Returns [(ts, row, expired)] as the query emits them."""

    def key(r):
        out = []
        for i, asc in parts:
            c = (r[i] is not None, r[i])
            out.append(c if asc else _Desc(c))
        return tuple(out)

    items, out = [], []
    for ts, r in events:
        out.append((ts, r, False))
        items.append((ts, r))
        if len(items) > n:
            items.sort(key=lambda e: key(e[1]))
            out.append((ts, items.pop()[1], True))
    return out


def _events(rnd, count, nan):
    values = [1.0, 2.0, 2.0, 3.5, None] + ([math.nan] if nan else [])
    return [
        (1000 + i, (rnd.choice("abc"), rnd.choice(values), rnd.randint(0, 3))) for i in range(count)
    ]


def _run(plan, events, rnd, snapshot_at=None):
    rt = cep.ExecutionPlanRuntime(cep.compile(plan))
    got = []
    rt.add_callback("Out", lambda evs: got.extend(evs))
    i = 0
    while i < len(events):
        k = rnd.randint(1, 40)
        rt.input_handler("S").send_batch(events[i : i + k])
        i += k
        if snapshot_at is not None and i >= snapshot_at:
            state = rt.snapshot()
            rt.shutdown()
            rt = cep.ExecutionPlanRuntime(cep.compile(plan))
            rt.add_callback("Out", lambda evs: got.extend(evs))
            rt.restore(state)
            snapshot_at = None
    rt.shutdown()
    return got


def _same(a, b):
    return len(a) == len(b) and all(
        x[0] == y[0]
        and len(x[1]) == len(y[1])
        and all(p == q or (p != p and q != q) for p, q in zip(x[1], y[1]))
        for x, y in zip(a, b)
    )


@pytest.mark.parametrize("seed", range(12))
def test_sort_window_equals_a_stable_sort_of_items_plus_newcomer(seed):
    rnd = random.Random(seed)
    n = rnd.choice([1, 2, 3, 5, 8])
    nan = seed % 3 == 0
    parts = rnd.choice(
        [
            [(1, True)],
            [(1, False)],
            [(1, True), (2, False)],
            [(2, False), (1, True)],
            [(0, True), (1, False)],
        ]
    )
    names = ("sym", "price", "vol")
    args = ", ".join(f"{names[i]}, '{'asc' if asc else 'desc'}'" for i, asc in parts)
    plan = (
        "@Plan:playback\ndefine stream S (sym string, price double, vol int);\n"
        f"from S#window.sort({n}, {args}) select sym, price, vol "
        "insert all events into Out;"
    )
    events = _events(rnd, 400, nan)
    want = [(ts, r) for ts, r, _ in _model(events, n, parts)]
    got = [(e[0], tuple(e[1])) for e in _run(plan, events, rnd)]
    assert _same(got, want), (
        plan,
        next((i, g, w) for i, (g, w) in enumerate(zip(got, want)) if not _same([g], [w])),
    )
    restored = [(e[0], tuple(e[1])) for e in _run(plan, events, random.Random(seed), 150)]
    assert _same(restored, want)
