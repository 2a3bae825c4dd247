"""Find the equality conditions that let a join, table or pattern use a hash lookup.

`equi_split(expr, side)` splits a condition into `lhs == rhs` conjuncts whose two sides come
from different inputs (`side(variable)` names the input a Variable belongs to) and the rest.
The rest is still evaluated per candidate, so using a key never changes the result: it only
narrows which candidates are looked at.
"""

from cep.model.expressions import (
    And,
    BinaryOp,
    CompareOp,
    Constant,
    FunctionCall,
    IsNull,
    Negate,
    Not,
    Or,
    TimeConstant,
    Variable,
)


def conjuncts(expr):
    """`a and b and c` as [a, b, c]."""
    if isinstance(expr, And):
        return conjuncts(expr.left) + conjuncts(expr.right)
    return [expr]


def sides_of(expr, side):
    """The set of inputs an expression reads (None for inputs `side` does not know)."""
    if isinstance(expr, Variable):
        return {side(expr)}
    if isinstance(expr, (Constant, TimeConstant)):
        return set()
    if isinstance(expr, (BinaryOp, CompareOp, And, Or)):
        return sides_of(expr.left, side) | sides_of(expr.right, side)
    if isinstance(expr, (Not, Negate, IsNull)):
        return sides_of(expr.operand, side)
    if isinstance(expr, FunctionCall):
        out = set()
        for a in expr.args:
            out |= sides_of(a, side)
        return out
    return {None}  # anything else (in-table, stream null checks): never used as a key


def equi_split(expr, side, probe, stored):
    """Pairs `(stored_expr, probe_expr)` of `==` conjuncts, and the remaining conjuncts.

    `stored_expr` reads only the input that is stored and indexed (a plain Variable), and
    `probe_expr` only the input that arrives and looks up."""
    pairs, rest = [], []
    if expr is None:
        return pairs, rest
    for c in conjuncts(expr):
        pair = _as_pair(c, side, probe, stored)
        if pair is None:
            rest.append(c)
        else:
            pairs.append(pair)
    return pairs, rest


def _as_pair(c, side, probe, stored):
    if not (isinstance(c, CompareOp) and c.op == "=="):
        return None
    for a, b in ((c.left, c.right), (c.right, c.left)):
        if (
            isinstance(a, Variable)
            and sides_of(a, side) == {stored}
            and sides_of(b, side) <= {probe}
            and sides_of(b, side)
        ):
            return a, b
    return None


def and_all(exprs):
    """The conjunction of `exprs` (None when empty)."""
    out = None
    for e in exprs:
        out = e if out is None else And(out, e)
    return out
