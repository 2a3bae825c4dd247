"""A pattern's e2 condition `e2.x > f(e1)` (or `<`) alone: each instance's first later event
above (below) its threshold found by binary lifting over block maxima (minima), so a dense
key costs O(log reach) numpy rounds instead of one per event of reach.

Level k holds the maximum of each block of 2**k events (np.fmax-free: a NaN value is made
-inf for `>` and +inf for `<`, which never meets any threshold, as a NaN never does in Java).
From j = the instance's next event, for k from high to low, a whole block before its stop
with no value above the threshold is skipped; j then is the first value above it, or the
stop. The comparisons are the condition's own (the same promoted values), so the matches are
those of the forward scan exactly."""

import numpy as np

from cep.engine.columnar.columns import DTYPES
from cep.engine.columnar.exprs import Unsupported, compile_vec
from cep.model import AttrType, CompareOp, Variable

_FLIP = {"<": ">", ">": "<"}
_INTS = (AttrType.INT, AttrType.LONG)
_FLOATS = (AttrType.FLOAT, AttrType.DOUBLE)


class _FirstOnly:
    """Only `e1.` attributes, as `r[i]` of e1's rows."""

    def __init__(self, definition, a1):
        self.definition, self.a1 = definition, a1

    def resolve(self, variable):
        i = self.definition.index_of(variable.name)
        if variable.stream != self.a1 or variable.index is not None or i < 0:
            raise Unsupported("not an e1 attribute")
        return f"r[{i}]", self.definition.attributes[i].type


def range_shape(cond, definition, a1, a2):
    """(own attribute index, op '>' or '<', threshold Vec over e1, compare dtype) when the
    e2 condition is exactly `own > f(e1)` / `own < f(e1)` (either side), else None."""
    if not isinstance(cond, CompareOp) or cond.op not in _FLIP:
        return None
    for own, other, op in (
        (cond.left, cond.right, cond.op),
        (cond.right, cond.left, _FLIP[cond.op]),
    ):
        if (
            not isinstance(own, Variable)
            or own.stream not in (None, a2)
            or own.index is not None
            or own.inner
        ):
            continue
        i = definition.index_of(own.name)
        try:
            thr = compile_vec(other, _FirstOnly(definition, a1))
        except Unsupported:
            continue
        dtype = _common(definition.attributes[i].type if i >= 0 else None, thr.type)
        if dtype is not None:
            return i, op, thr, dtype
    return None


def _common(a, b):
    """The dtype both sides compare in (Java's widening), None where it is not exact here."""
    if a is None or a not in _INTS + _FLOATS or b not in _INTS + _FLOATS:
        return None
    if a == b:
        return DTYPES[a]
    if a in _INTS and b in _INTS:
        return np.dtype(np.int64)
    if AttrType.FLOAT in (a, b) and (a in _INTS or b in _INTS):
        return None  # an integer as float: one rounding the compiler checks, not here
    return np.dtype(np.float64)


def first_beyond(values, op, thr, start, stop):
    """Per instance: the first j in [start, stop) with values[j] op thr, else stop."""
    up = op == ">"
    w = values
    if w.dtype.kind == "f" and np.isnan(w).any():
        w = np.where(np.isnan(w), -np.inf if up else np.inf, w)
    reach = int((stop - start).max()) if len(start) else 0
    levels, pick = [w], np.maximum if up else np.minimum
    for k in range(1, max(reach, 1).bit_length()):
        half = 1 << (k - 1)
        prev = levels[-1]
        levels.append(pick(prev[:-half], prev[half:]))
    j = start.copy()
    for k in range(len(levels) - 1, -1, -1):
        size = 1 << k
        can = np.flatnonzero(j + size <= stop)
        if not len(can):
            continue
        blk = levels[k][j[can]]
        skip = blk <= thr[can] if up else blk >= thr[can]
        j[can[skip]] += size
    return j


def matches(values, op, thr, start, stop):
    """(instance positions that match, their e2 index) given each instance's start/stop."""
    j = first_beyond(values, op, thr, start, stop)
    inside = np.flatnonzero(j < stop)
    v, t = values[j[inside]], thr[inside]
    hit = v > t if op == ">" else v < t
    return inside[hit], j[inside[hit]]
