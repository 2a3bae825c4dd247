"""Segmented sequential sums and per-key helpers for the keyed kernels.

`running_sums` gives each segment's running value after each of its operations with exactly
the additions a row loop performs, in order (no reassociation). The operations are packed
row by row: row r holds operation r of every segment longer than r, the segments sorted by
length (longest first), so row r is a prefix as long as row r-1's or shorter and one
vectorized `row r += row r-1 prefix` is the loop's statement for every segment at once (IEEE
addition commutes exactly). No padding; when few segments are left (a long key), each one's
tail is finished by its own `np.add.accumulate`."""

import numpy as np

TAIL = 32  # segments left below which each finishes on its own


def running_sums(vals, starts):
    """vals: float64 operations laid out segment after segment; starts: each segment's first
    index (ascending, starting at 0, no empty segment). -> the running sum after each
    operation, each segment starting from its first operation."""
    n = len(vals)
    if not n:
        return np.empty(0, np.float64)
    lens = np.diff(np.append(starts, n))
    order = np.argsort(-lens, kind="stable")
    rank = np.empty(len(lens), np.intp)
    rank[order] = np.arange(len(lens))
    slens = lens[order]
    width = np.searchsorted(-slens, -np.arange(int(slens[0])), "left")  # row r's length
    rowstart = np.concatenate([[0], np.cumsum(width)])
    seg = np.repeat(rank, lens)
    idx = np.arange(n) - np.repeat(starts, lens)  # position in the segment
    idx = rowstart[idx] + seg
    packed = np.empty(n, np.float64)
    packed[idx] = vals
    rs, w = rowstart.tolist(), width.tolist()
    r = 1
    while r < len(w) and w[r] >= TAIL:
        a, b, c = rs[r], rs[r - 1], w[r]
        packed[a : a + c] += packed[b : b + c]
        r += 1
    if r < len(w):
        for s in range(w[r]):  # the long segments still running: each on its own
            cells = rowstart[r - 1 : int(slens[s])] + s
            packed[cells] = np.add.accumulate(packed[cells])
    return packed[idx]


def local_index(key_starts, keys):
    """Each row's index within its key's run (rows sorted by key)."""
    return np.arange(len(keys)) - key_starts[keys]


def wrapping_cumsum(x):
    """Prefix sums with a leading 0, wrapping at 64 bits as Java's long does."""
    out = np.zeros(len(x) + 1, np.int64)
    with np.errstate(over="ignore"):
        np.cumsum(x.astype(np.int64, copy=False), out=out[1:])
    return out


def key_time(key, t, nkeys, reach):
    """One ascending int64 per row ordering (key, timestamp), key k's timestamps offset by
    k * span so that a timestamp moved by up to `reach` stays clear of the next key's; None
    when that would not fit in 62 bits."""
    tmin, tmax = int(t.min()), int(t.max())
    span = tmax - tmin + reach + 2
    if nkeys * span >= 1 << 62:
        return None
    comp = key.astype(np.int64) * span
    comp += t
    comp -= tmin
    return comp
