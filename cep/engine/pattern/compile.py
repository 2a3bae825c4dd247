"""Compile a pattern/sequence input (model) into a SharedMachine with generated conditions.

Each state's filters become one generated `cond(p, r)`. A conjunct `own_attr == <expression
over earlier states>` also becomes an index key: waiting partials are filed under the value of
the expression, and an arriving event only looks at the partials filed under its own value.
"""

from cep.engine.expressions import FALLBACK_ERRORS, compile_expression, make_function
from cep.engine.pattern.gate import gate_source, own_conjuncts
from cep.engine.pattern.machine import compile_machine
from cep.engine.pattern.plan import STREAM, flatten
from cep.engine.pattern.ranged import find_range
from cep.engine.pattern.scope import PatternScope
from cep.engine.table.keys import and_all, equi_split, sides_of
from cep.errors import InvalidQueryError, TypeMismatchError, UnknownStreamError
from cep.model import AttrType, Filter


def compile_pattern(state_input, definitions, scope_hook=None, fixed=False):
    """SharedMachine for `state_input`; `definitions`: stream id -> StreamDefinition; `fixed`:
    the plan's `@Plan:siddhi('fixed')` (machine.py, SharedMachine).

    `scope_hook(scope)` may decorate each condition scope (e.g. with `in Table` support)."""
    _check_streams(state_input, definitions)

    def conditions(node, nodes):
        scope = PatternScope(nodes, definitions, own=node)
        if scope_hook is not None:
            scope_hook(scope)
        expr = and_all([h.expression for h in node.state.stream.handlers if isinstance(h, Filter)])
        _reject_windows(node)
        if expr is None:
            return None, None, None
        cond = _function("cond", "p, r", expr, scope, want_bool=True)
        if state_input.kind == "sequence":
            node.inline = compile_expression(expr, scope)
        node.gate = gate_source(own_conjuncts(expr, lambda e: _sides(e, node)), scope)
        row_key, partial_key, rest = _index_keys(expr, node, scope)
        if row_key is not None and node.kind == STREAM and state_input.kind == "pattern":
            # the index already guarantees the equalities: test only the rest
            expr = and_all(rest)
            cond = _function("cond", "p, r", expr, scope) if expr is not None else None
            found = (
                None
                if node.scope is not None
                else find_range(rest, _own_refs(node), lambda e: _sides(e, node), scope)
            )
            if found is not None:
                node.range, expr = found[:3], and_all(found[3])
        node.hits = _hits_function(expr, scope) if expr is not None else None
        return cond, row_key, partial_key

    return compile_machine(state_input, conditions, fixed=fixed)


def selector_scope(shared, definitions):
    """The scope a pattern query's selector compiles against (composite rows)."""
    return PatternScope(shared.nodes, definitions, filled=shared.final_filled)


def _check_streams(state_input, definitions):
    nodes, _ = flatten(state_input.state)
    for n in nodes:
        if n.stream_id not in definitions:
            raise UnknownStreamError(
                f"pattern state '{n.alias or n.stream_id}' reads stream '{n.stream_id}', "
                f"which is not defined",
                n.state.stream.span or n.state.span,
            )


def _reject_windows(node):
    for h in node.state.stream.handlers:
        if not isinstance(h, Filter):
            raise InvalidQueryError(
                f"pattern state '{node.alias or node.stream_id}' can only have filters, not "
                f"#{getattr(h, 'name', type(h).__name__)}",
                h.span,
            )


def _function(name, args, expr, scope, want_bool=False):
    c = compile_expression(expr, scope)
    if want_bool and c.type not in (AttrType.BOOL, AttrType.OBJECT):
        raise TypeMismatchError(
            f"a pattern condition must be a bool expression, not {c.type}",
            getattr(expr, "span", None),
        )
    src = (
        f"def {name}({args}):\n"
        "    try:\n"
        f"        return {c.fast}\n"
        "    except FALLBACK:\n"
        f"        return {c.source}\n"
    )
    return make_function(name, src, {**c.globals, "FALLBACK": FALLBACK_ERRORS})


def _hits_function(expr, scope):
    """`hits(items, r)`: the waiting partials the event fits, the condition inlined."""
    c = compile_expression(expr, scope)
    src = (
        "def hits(items, r):\n"
        "    try:\n"
        f"        return [p for p in items if {c.fast}]\n"
        "    except FALLBACK:\n"
        f"        return [p for p in items if {c.source}]\n"
    )
    return make_function("hits", src, {**c.globals, "FALLBACK": FALLBACK_ERRORS})


def _own_refs(node):
    return {None, node.alias} if node.alias else {None, node.stream_id}


def _side_function(node):
    own_refs = _own_refs(node)

    def side(v):
        if v.stream in own_refs and v.index is None:
            return "own"
        return "earlier" if v.stream is not None else None

    return side


def _sides(expr, node):
    return sides_of(expr, _side_function(node))


def _index_keys(expr, node, scope):
    """(row_key(r), partial_key(p), other conjuncts) from `own == earlier` conjuncts."""
    side = _side_function(node)
    pairs, rest = equi_split(expr, side, probe="earlier", stored="own")
    if not pairs:
        return None, None, None
    own_exprs = [a for a, _ in pairs]
    earlier = [b for _, b in pairs]
    row_src = [compile_expression(a, scope) for a in own_exprs]
    part_src = [compile_expression(b, scope) for b in earlier]
    g = {}
    for c in row_src + part_src:
        g.update(c.globals)

    def tup(cs):
        return cs[0].source if len(cs) == 1 else "(" + ", ".join(c.source for c in cs) + ",)"

    row_key = make_function("row_key", f"def row_key(r):\n    return {tup(row_src)}\n", g)
    partial_key = make_function(
        "partial_key", f"def partial_key(p):\n    return {tup(part_src)}\n", g
    )
    return row_key, partial_key, rest
