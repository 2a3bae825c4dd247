"""Segmented sequential sums: each group's running value after each of its operations, in
operation order, with exactly the additions a row loop performs (no reassociation).

The operations are laid out as a (groups x longest group) matrix padded with the identity
(-0.0 for floats: x + -0.0 == x for every x, signed zeros included; 0 for integers), with
each group's starting value in column 0, and summed by `np.add.accumulate` along the rows:
element j of a row is element j-1 plus operation j, the row loop's statement."""

import numpy as np


class Layout:
    """Where each operation goes: its group (`codes`), its column (`pos`, from 1)."""

    def __init__(self, codes, ng, counts, pos, order=None, starts=None):
        self.codes, self.ng, self.counts, self.pos = codes, ng, counts, pos
        self.order, self.starts = order, starts
        self.width = int(counts.max()) + 1 if ng else 1


def layout(codes, ng, max_cells):
    """The Layout of operations with group `codes` (0..ng-1), or None when the matrix would
    have more than max_cells cells (very uneven groups)."""
    nops = len(codes)
    if ng == 1:
        return Layout(codes, 1, np.array([nops]), np.arange(1, nops + 1))
    counts = np.bincount(codes, minlength=ng)
    if ng * (int(counts.max()) + 1) > max_cells:
        return None
    # stable sort; 16-bit keys take numpy's radix sort
    order = np.argsort(codes.astype(np.int16) if ng < 32768 else codes, kind="stable")
    starts = np.cumsum(counts) - counts
    pos = np.empty(nops, np.intp)
    pos[order] = np.arange(nops) - starts[codes[order]] + 1
    return Layout(codes, ng, counts, pos, order, starts)


def scan(lay, init, vals, ident, dtype):
    """(value after each operation, each group's final value)."""
    if lay.ng == 1:  # one row: the operations in order after the starting value
        acc = np.add.accumulate(np.concatenate((np.array(init, dtype), vals)))
        return acc[1:], acc[-1:]
    mat = np.full((lay.ng, lay.width), ident, dtype)
    mat[:, 0] = init
    mat[lay.codes, lay.pos] = vals
    acc = np.add.accumulate(mat, axis=1)
    return acc[lay.codes, lay.pos], acc[np.arange(lay.ng), lay.counts]
