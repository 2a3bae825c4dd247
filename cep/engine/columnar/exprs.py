"""Expressions over a whole columnar batch as numpy operations, with the row path's Java
semantics, for the subset where numpy computes exactly what the generated row code computes:

attributes and non-null literals; `== != < <= > >=` (a null operand makes a comparison false,
and `!=` true); `and`/`or`/`not` with null as false; `is null`; `+ - *` and unary `-` on
int (32-bit wrap), long (64-bit wrap), double, and float with float (32-bit, which double
arithmetic rounded to 32 bits equals for these operations). Operands are promoted as Java
does (int to long, int/long to double) before the operation. Anything else (division,
modulo, functions, float with integer operands) raises Unsupported and the query keeps the
row path for every batch."""

import re

import numpy as np

from cep.engine.columnar.columns import DTYPES
from cep.model import AttrType

_NUM = (AttrType.INT, AttrType.LONG, AttrType.FLOAT, AttrType.DOUBLE)
_RANK = {AttrType.INT: 0, AttrType.LONG: 1, AttrType.FLOAT: 2, AttrType.DOUBLE: 3}
_ATTR = re.compile(r"r\[(\d+)\]")
_CMP = {
    "==": np.equal,
    "!=": np.not_equal,
    "<": np.less,
    "<=": np.less_equal,
    ">": np.greater,
    ">=": np.greater_equal,
}
_ARITH = {"+": np.add, "-": np.subtract, "*": np.multiply}


class Unsupported(Exception):
    """The expression has no exact columnar form here."""


class Vec:
    """A compiled columnar expression: `fn(cols) -> (values, nulls or None)`; a literal is a
    0-d array that broadcasts."""

    def __init__(self, fn, type_, literal=False):
        self.fn, self.type, self.literal = fn, type_, literal


def compile_vec(expr, scope):
    """A Vec of a model expression over the stream `scope` resolves, or raise Unsupported."""
    method = globals().get("_" + type(expr).__name__)
    if method is None:
        raise Unsupported(type(expr).__name__)
    return method(expr, scope)


def _Variable(e, scope):
    src, t = scope.resolve(e)
    m = _ATTR.fullmatch(src)
    if m is None or t not in DTYPES:
        raise Unsupported(src)
    i = int(m.group(1))
    return Vec(lambda c: (c.values[i], c.nulls[i]), t)


def _Constant(e, scope):
    v, t = e.value, e.type
    if v is None or t not in DTYPES or DTYPES[t].kind == "O" and not isinstance(v, str):
        raise Unsupported("null or object literal")
    arr = np.array(v, object if t == AttrType.STRING else DTYPES[t])
    return Vec(lambda c: (arr, None), t, literal=True)


def _as(vec, t):
    """vec promoted to numeric type t (Java's widening)."""
    if vec.type == t:
        return vec
    if vec.type not in _NUM or _RANK[vec.type] > _RANK[t]:
        raise Unsupported(f"{vec.type} as {t}")
    if t == AttrType.FLOAT and not vec.literal:
        raise Unsupported("integer column as float")  # one rounding; not checked here
    dtype, fn = DTYPES[t], vec.fn

    def run(c):
        v, m = fn(c)
        return v.astype(dtype), m

    return Vec(run, t, vec.literal)


def _widest(a, b):
    return a.type if _RANK[a.type] >= _RANK[b.type] else b.type


def _either(ma, mb):
    if ma is None:
        return mb
    return ma if mb is None else ma | mb


def _CompareOp(e, scope):
    a, b = compile_vec(e.left, scope), compile_vec(e.right, scope)
    if a.type in _NUM and b.type in _NUM:
        t = _widest(a, b)
        a, b = _as(a, t), _as(b, t)
    elif (
        a.type != b.type
        or a.type not in (AttrType.STRING, AttrType.BOOL)
        or e.op not in ("==", "!=")
    ):
        raise Unsupported(f"{a.type} {e.op} {b.type}")
    op, fa, fb, ne = _CMP[e.op], a.fn, b.fn, e.op == "!="

    def run(c):
        va, ma = fa(c)
        vb, mb = fb(c)
        r = np.asarray(op(va, vb), bool)
        m = _either(ma, mb)
        if m is None:
            return r, None
        return (r | m if ne else r & ~m), None

    return Vec(run, AttrType.BOOL)


def _truth(vec):
    """A bool operand with null as false."""
    if vec.type != AttrType.BOOL:
        raise Unsupported(f"{vec.type} as a condition")
    fn = vec.fn

    def run(c):
        v, m = fn(c)
        return v if m is None else v & ~m

    return run


def _And(e, scope):
    fa, fb = _truth(compile_vec(e.left, scope)), _truth(compile_vec(e.right, scope))
    return Vec(lambda c: (fa(c) & fb(c), None), AttrType.BOOL)


def _Or(e, scope):
    fa, fb = _truth(compile_vec(e.left, scope)), _truth(compile_vec(e.right, scope))
    return Vec(lambda c: (fa(c) | fb(c), None), AttrType.BOOL)


def _Not(e, scope):
    fa = _truth(compile_vec(e.operand, scope))
    return Vec(lambda c: (~fa(c), None), AttrType.BOOL)


def _IsNull(e, scope):
    a = compile_vec(e.operand, scope)
    fa = a.fn

    def run(c):
        v, m = fa(c)
        if m is None:
            return np.zeros(len(c), bool) if v.ndim else np.array(False), None
        return m.copy(), None

    return Vec(run, AttrType.BOOL)


def _BinaryOp(e, scope):
    if e.op not in _ARITH:
        raise Unsupported(e.op)
    a, b = compile_vec(e.left, scope), compile_vec(e.right, scope)
    if a.type not in _NUM or b.type not in _NUM:
        raise Unsupported("arithmetic on non-numbers")
    t = _widest(a, b)
    a, b = _as(a, t), _as(b, t)
    op, fa, fb, dtype = _ARITH[e.op], a.fn, b.fn, DTYPES[t]

    def run(c):
        va, ma = fa(c)
        vb, mb = fb(c)
        return np.asarray(op(va, vb), dtype), _either(ma, mb)

    return Vec(run, t, a.literal and b.literal)


def _Negate(e, scope):
    a = compile_vec(e.operand, scope)
    if a.type not in _NUM:
        raise Unsupported("negation of a non-number")
    fa = a.fn

    def run(c):
        v, m = fa(c)
        return np.negative(v), m

    return Vec(run, a.type, a.literal)


def _FunctionCall(e, scope):
    """An extension function with a batch kernel (cep.catalog.ext.vector); others keep the
    row path."""
    from cep.catalog import ext
    from cep.catalog.ext.vector import kernel

    if not e.namespace:
        raise Unsupported(f"function {e.name}()")
    entry = ext.lookup(e.namespace, e.name)
    if entry is None:
        raise Unsupported(f"function {e.namespace}:{e.name}()")
    args = [compile_vec(a, scope) for a in e.args]
    types = [a.type for a in args]
    run_kernel = kernel(e.namespace, e.name, types, e.args)
    if run_kernel is None:
        raise Unsupported(f"no batch form of {e.namespace}:{e.name}()")
    rtype = entry.rule(types, e)
    fns = [a.fn for a in args]

    def run(c):
        pairs = [f(c) for f in fns]
        return run_kernel([p[0] for p in pairs], [p[1] for p in pairs], len(c))

    return Vec(run, rtype, False)
