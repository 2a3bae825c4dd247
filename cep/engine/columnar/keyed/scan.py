"""Segmented sequential sums and per-key helpers for the keyed kernels.

`running_sums` gives each segment's running value after each of its operations with exactly
the additions a row loop performs, in order (no reassociation): the segments go as columns
of a matrix, one per length class (lengths up to a power of two, so padding at most doubles
the cells), and `np.add.accumulate` down the rows adds row r to row r-1, the loop's
statement, for every segment at once."""
import numpy as np


def running_sums(vals, starts):
    """vals: float64 operations laid out segment after segment; starts: each segment's first
    index (ascending, starting at 0, no empty segment). -> the running sum after each
    operation, each segment starting from its first operation."""
    n = len(vals)
    out = np.empty(n, np.float64)
    if not n:
        return out
    lens = np.diff(np.append(starts, n))
    seg = np.repeat(np.arange(len(starts)), lens)
    pos = np.arange(n) - starts[seg]
    cls = np.ceil(np.log2(lens)).astype(np.int64)  # length class: up to 2**cls
    rank = np.empty(len(starts), np.intp)
    for c in np.unique(cls).tolist():
        members = np.flatnonzero(cls == c)
        rank[members] = np.arange(len(members))
        ops = np.flatnonzero(cls[seg] == c) if len(members) != len(starts) else \
            np.arange(n)
        width = int(lens[members].max())
        mat = np.zeros((width, len(members)), np.float64)
        r, col = pos[ops], rank[seg[ops]]
        mat[r, col] = vals[ops]
        np.add.accumulate(mat, axis=0, out=mat)
        out[ops] = mat[r, col]
    return out


def local_index(key_starts, keys):
    """Each row's index within its key's run (rows sorted by key)."""
    return np.arange(len(keys)) - key_starts[keys]


def wrapping_cumsum(x):
    """Prefix sums with a leading 0, wrapping at 64 bits as Java's long does."""
    out = np.zeros(len(x) + 1, np.int64)
    with np.errstate(over="ignore"):
        np.cumsum(x.astype(np.int64, copy=False), out=out[1:])
    return out
