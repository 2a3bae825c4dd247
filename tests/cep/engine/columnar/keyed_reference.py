"""The reference for the keyed-kernel tests: the real engine, fed key by key as
cep/backtest/task.py feeds it (each key's run back to back on its own playback clock), and
the kernel over the same events; both as comparable rows."""

import math
import struct

import numpy as np

import cep
from cep.backtest.rewrite import split_partitions
from cep.engine.columnar.keyed.lookup import kernel_for, plan_query  # noqa: F401

END_PAD = 10**9


def engine_rows(plan, stream, out_stream, ts, starts, cols):
    """[(key run, ts, row)] the engine emits into out_stream, fed key by key."""
    rt = cep.ExecutionPlanRuntime(split_partitions(plan), playback=True)
    got, key = [], [0]
    rt.add_callback(out_stream, lambda evs: got.extend((key[0], t, tuple(r)) for t, r in evs))
    definition = rt.junctions[stream].definition
    lists = [cols[a.name].tolist() for a in definition.attributes]
    rows = list(zip(*lists))
    tl = ts.tolist()
    end = int(ts.max()) + END_PAD if len(ts) else 0
    handler = rt.input_handler(stream)
    try:
        for k in range(len(starts) - 1):
            a, b = int(starts[k]), int(starts[k + 1])
            key[0] = k
            if k:
                rt.advance_time(end)
                rt.scheduler.restore_clock(None)
            bad = handler.send_batch(list(zip(tl[a:b], rows[a:b])))
            assert not bad, bad
        rt.advance_time(end)
    finally:
        rt.shutdown()
    return got


def kernel_rows(kernel, ts, starts, cols):
    end = int(ts.max()) + END_PAD if len(ts) else 0
    res = kernel.run(ts, starts, cols, end)
    assert res is not None, "the kernel declined the batch"
    out_ts, out, out_key = res
    assert out_ts.dtype == np.int64 and out_key.dtype == np.intp
    names = [n for n, _ in kernel.output_attributes]
    lists = [out[n].tolist() for n in names]
    return list(
        zip(
            out_key.tolist(),
            out_ts.tolist(),
            map(tuple, zip(*lists)) if lists else [()] * len(out_ts),
        )
    )


def exact(rows):
    """Rows with floats as their bits (-0.0 differs from 0.0; every NaN is one NaN)."""

    def norm(v):
        if isinstance(v, float):
            return "nan" if math.isnan(v) else struct.pack("<d", v)
        return (type(v).__name__, v)

    return [(k, t, tuple(map(norm, r))) for k, t, r in rows]


def assert_same(plan, index, stream, ts, starts, cols):
    """The kernel's rows equal the engine's exactly; -> how many rows."""
    kernel = kernel_for(plan, index)
    assert kernel is not None, "no kernel for the query"
    want = engine_rows(plan, stream, kernel.output_stream, ts, starts, cols)
    got = kernel_rows(kernel, ts, starts, cols)
    assert exact(got) == exact(want)
    return len(want)


def keyed_data(rng, nkeys, per_key, spread_ms, step_choices=None):
    """(ts, starts, key ids): key runs of random sizes (0..2*per_key), timestamps sorted per
    key with random gaps drawn from `step_choices` (equal timestamps included)."""
    sizes = rng.integers(0, 2 * per_key + 1, nkeys)
    starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.intp)
    n = int(starts[-1])
    steps = rng.choice(
        np.asarray(step_choices if step_choices is not None else [0, 1, spread_ms // 3, spread_ms]),
        n,
    )
    ts = np.empty(n, np.int64)
    for k in range(nkeys):
        a, b = starts[k], starts[k + 1]
        ts[a:b] = 1_000_000 + int(rng.integers(0, spread_ms)) + np.cumsum(steps[a:b])
    keyid = np.repeat(np.arange(nkeys), sizes)
    return ts, starts, keyid
