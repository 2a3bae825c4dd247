"""Whole-batch (numpy) forms of the extension functions whose batch result is exactly the row
path's: the columnar engine (cep/engine/columnar) runs a projection of them over a batch
without a Python call per event and function. Each kernel takes the arguments' values and
null masks (a literal is a 0-d array) and gives (values, nulls); a null argument gives null,
as the row path's guarded Java implementation does. Functions without a kernel here keep the
row path (their results, such as transcendental math, could differ from Java's in the last
bit between numpy's and the C library's implementations)."""

from typing import Callable, Dict, Optional, Sequence, Tuple

import numpy as np

from cep.catalog.ext.support import DOUBLE, FLOAT, INT, LONG, STRING, java_length
from cep.engine import javamath

Kernel = Callable[
    [Sequence[np.ndarray], Sequence[Optional[np.ndarray]], int],
    Tuple[np.ndarray, Optional[np.ndarray]],
]
KERNELS: Dict[Tuple[str, str], Callable] = {}
_NUM = (INT, LONG, FLOAT, DOUBLE)


def kernel(ns: str, name: str, types, args) -> Optional[Kernel]:
    """The batch kernel of `ns:name` for these argument types, or None."""
    factory = KERNELS.get((ns, name))
    return None if factory is None else factory(types, args)


def _nulls(nulls, n):
    """The union of the arguments' null masks (None: no nulls)."""
    out = None
    for m in nulls:
        if m is None:
            continue
        m = np.broadcast_to(m, (n,)) if m.ndim == 0 else m
        out = m.copy() if out is None else out | m
    return out if out is not None and out.any() else None


def _as_float(v):
    return v.astype(np.float64) if v.dtype != np.float64 else v


def _unary_math(ufunc, accept=_NUM):
    def factory(types, args):
        if types[0] not in accept:
            return None

        def run(values, nulls, n):
            return ufunc(_as_float(values[0])), _nulls(nulls, n)

        return run

    return factory


def _binary_math(fn):
    def factory(types, args):
        if types[0] not in _NUM or types[1] not in _NUM:
            return None

        def run(values, nulls, n):
            return fn(_as_float(values[0]), _as_float(values[1])), _nulls(nulls, n)

        return run

    return factory


def _signum(types, args):
    if types[0] not in _NUM:
        return None

    def run(values, nulls, n):
        return np.sign(_as_float(values[0])).astype(np.int32), _nulls(nulls, n)

    return run


def _java_max(a, b):
    """Math.max: NaN in either gives NaN (np.maximum too); max(-0.0, 0.0) is 0.0."""
    out = np.maximum(a, b)
    if not np.any(out == 0):  # the usual case: no signed zero to settle
        return out
    zero = (a == 0) & (b == 0)
    if np.any(zero):
        out = np.where(zero, np.where(np.signbit(a) & np.signbit(b), -0.0, 0.0), out)
    return out


def _java_min(a, b):
    """Math.min: min(-0.0, 0.0) is -0.0."""
    out = np.minimum(a, b)
    if not np.any(out == 0):
        return out
    zero = (a == 0) & (b == 0)
    if np.any(zero):
        out = np.where(zero, np.where(np.signbit(a) | np.signbit(b), -0.0, 0.0), out)
    return out


def _round(types, args):
    """Math.round: floor(x + 0.5); NaN 0; saturating at the int/long range."""
    if types[0] not in (FLOAT, DOUBLE):
        return None
    lo, hi, dtype = (
        (javamath.INT_MIN, javamath.INT_MAX, np.int32)
        if types[0] is FLOAT
        else (javamath.LONG_MIN, javamath.LONG_MAX, np.int64)
    )

    fast_limit = min(2.0**52, float(hi))

    def run(values, nulls, n):
        x = _as_float(values[0])
        if np.abs(x).max(initial=0.0) < fast_limit:  # no NaN, no saturation: floor(x + 1/2)
            r = np.floor(x)
            return (r + ((x - r) >= 0.5)).astype(dtype), _nulls(nulls, n)
        r = np.floor(x)
        r = r + ((x - r) >= 0.5)  # exact where it decides: the row path's formula
        big = np.abs(x) >= 2.0**52
        if big.any():
            r = np.where(big, x, r)
        r = np.nan_to_num(r, nan=0.0, posinf=float(hi), neginf=float(lo))
        high, low = r >= float(hi), r <= float(lo)
        res = np.clip(r, float(lo), float(hi)).astype(dtype)
        if high.any():
            res[high] = hi
        if low.any():
            res[low] = lo
        return res, _nulls(nulls, n)

    return run


class _Memo(dict):
    """fn's results by argument: `map(memo.__getitem__, column)` runs at C speed for the
    values seen before (event streams repeat their keys); bounded."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def __missing__(self, s):
        r = self.fn(s)
        if len(self) >= 65536:
            self.clear()
        self[s] = r
        return r


def _column(v, n):
    return np.broadcast_to(v, (n,)) if v.ndim == 0 else v


_FACTORS = []  # [(column, codes, uniques)] of the latest string columns factorised


def _factorize(v):
    """(codes, uniques) of an object column (a null is code -1), shared by every function
    over the same column of a batch: one hash pass per column, then each function runs once
    per distinct value and gathers its results by code."""
    for arr, codes, uniq in _FACTORS:
        if arr is v:
            return codes, uniq
    codes, uniq = _factorizer()(v)
    _FACTORS.insert(0, (v, codes, uniq))
    del _FACTORS[4:]
    return codes, uniq


def _factorizer():
    """pandas' hash-table factorisation of an object array (null: code -1); its array-level
    entry point where this pandas has it (no Series/Index wrapping per batch)."""
    global _FACTORIZE
    if _FACTORIZE is None:
        try:
            from pandas.core.algorithms import factorize_array as _FACTORIZE
        except ImportError:  # another pandas layout: the public function
            from pandas import factorize as _FACTORIZE
    return _FACTORIZE


_FACTORIZE = None


def _gather(results, codes, dtype, fill):
    """results (one per distinct value) spread back over the batch; code -1 gets `fill`."""
    table = np.empty(len(results) + 1, dtype)
    table[:-1] = results
    table[-1] = fill
    return table[codes]


def _strings(fn, dtype=object):
    """A str -> value function over an object column, nulls left null (a null's slot holds
    0 in a numeric result)."""

    def factory(types, args):
        if len(types) != 1 or types[0] is not STRING:
            return None
        memo = _Memo(fn)
        get = memo.__getitem__
        fill = None if dtype is object else 0

        def run(values, nulls, n):
            v, m = _column(values[0], n), _nulls(nulls, n)
            codes, uniq = _factorize(v)
            out = _gather(list(map(get, uniq)), codes, dtype, fill)
            if m is not None:
                out[m] = fill
            return out, m

        return run

    return factory


def _concat(types, args):
    """str:concat over strings: nulls are left out (never a null result)."""
    if any(t is not STRING for t in types):
        return None

    def run(values, nulls, n):
        if all(m is None or not m.any() for m in nulls):
            columns = [v for v in values if v.ndim == 1]
            if columns and all(c is columns[0] for c in columns):  # one column and literals
                codes, uniq = _factorize(columns[0])
                parts = [np.asarray(uniq, object) if v.ndim == 1 else v for v in values]
                out = parts[0]
                for p in parts[1:]:
                    out = out + p
                return _gather(list(out), codes, object, None), None
            out = values[0]
            for v in values[1:]:
                out = out + v  # object arrays: str.__add__ per element, in C's loop
            out = np.asarray(out, object)
            if out.ndim == 0:
                out = np.full(n, out.item(), object)
            return out, None
        cols = [_column(v, n) for v in values]
        out = np.empty(n, object)
        out[:] = ["".join(s for s in row if s is not None) for row in zip(*cols)]
        return out, None

    return run


_FD = (FLOAT, DOUBLE)
KERNELS.update(
    {
        ("math", "abs"): _unary_math(np.abs),
        ("math", "sqrt"): _unary_math(np.sqrt),
        ("math", "floor"): _unary_math(np.floor),
        ("math", "ceil"): _unary_math(np.ceil, _FD),
        ("math", "signum"): _signum,
        ("math", "max"): _binary_math(_java_max),
        ("math", "min"): _binary_math(_java_min),
        ("math", "copySign"): _binary_math(np.copysign),
        ("math", "round"): _round,
        ("str", "upper"): _strings(str.upper),
        ("str", "lower"): _strings(str.lower),
        ("str", "reverse"): _strings(lambda s: s[::-1]),
        ("str", "length"): _strings(java_length, np.int32),
        ("str", "concat"): _concat,
    }
)
