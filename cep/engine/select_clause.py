"""What a select clause says, read from the query model without compiling it: its output
items (`select *` expanded), whether it aggregates, and a bottom-up rewrite of expression
trees. The selector compiler, the fused window loops and the columnar kernels all read these;
keeping them out of cep/engine/selector.py lets those modules build on each other in one
direction."""

import dataclasses

from cep.catalog import aggregators as agg
from cep.model import FunctionCall, Variable
from cep.model.expressions import Expression


def rewrite(expr, fn):
    """Rebuild `expr` bottom-up, replacing each node n by fn(n) (or n when fn returns None)."""
    if not isinstance(expr, Expression):
        return expr
    changes = {}
    for f in dataclasses.fields(expr):
        v = getattr(expr, f.name)
        if isinstance(v, Expression):
            nv = rewrite(v, fn)
        elif isinstance(v, tuple) and any(isinstance(x, Expression) for x in v):
            nv = tuple(rewrite(x, fn) for x in v)
        else:
            continue
        if nv is not v:
            changes[f.name] = nv
    node = expr
    if changes:  # children replaced by nodes of the same types: the node keeps its stamps
        node = dataclasses.replace(expr, **changes)
        if expr.rtype is not None:
            node.resolve(expr.rtype, expr.entry)
    out = fn(node)
    return node if out is None else out


def output_items(selector, scope, input_definition):
    """(name, expression) pairs of the select clause; `select *` expands the input."""
    if selector.select_all or not selector.attributes:
        items = getattr(scope, "select_all", None)
        if items is not None:
            return list(items())
        return [(a.name, Variable(a.name)) for a in input_definition.attributes]
    return [(a.rename, a.expression) for a in selector.attributes]


def has_aggregators(selector):
    """Whether a select clause (or its having) calls an aggregator."""
    found = []

    def visit(node):
        if isinstance(node, FunctionCall) and agg.lookup(node.name, node.namespace):
            found.append(node)
        return None

    for a in selector.attributes:
        rewrite(a.expression, visit)
    if selector.having is not None:
        rewrite(selector.having, visit)
    return bool(found)
