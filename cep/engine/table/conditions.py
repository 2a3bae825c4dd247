"""Conditions that read a table row `t` next to an event: `on` clauses of table outputs and
joins, and `cond in Table` membership in filters.

`TableScope` resolves `Table.attr` (and bare names the event side does not have) to `t[i]`;
everything else goes to the event side's own scope. When the condition has `Table.key == expr`
on the table's unique key, the generated lookup reads one row instead of scanning.
"""

import itertools

from cep.engine.expressions import (
    FALLBACK_ERRORS,
    Compiled,
    Scope,
    compile_expression,
    make_function,
)
from cep.engine.table.keys import equi_split
from cep.errors import TypeMismatchError, UnknownAttributeError, UnknownStreamError
from cep.model import AttrType

_ids = itertools.count()


class TableScope(Scope):
    """A table row `t` beside an outer scope (the event side)."""

    def __init__(self, table, outer, row="t"):
        self.table = table
        self.definition = table.definition
        self.outer = outer
        self.row = row
        self.row_vars = getattr(outer, "row_vars", ("r",))

    def is_table_var(self, v):
        if v.stream is not None:
            return v.stream == self.table.id
        try:
            self.outer.resolve(v)
            return False
        except (UnknownAttributeError, UnknownStreamError):
            return self.definition.index_of(v.name) >= 0

    def resolve(self, variable):
        if self.is_table_var(variable):
            i = self.definition.index_of(variable.name)
            if i < 0:
                raise UnknownAttributeError(
                    f"table '{self.table.id}' has no attribute '{variable.name}' (it has "
                    f"{', '.join(self.definition.attribute_names)})",
                    variable.span,
                )
            return f"{self.row}[{i}]", self.definition.attributes[i].type
        return self.outer.resolve(variable)

    def __getattr__(self, name):
        # other hooks (pattern null checks, nested `in`) belong to the event side
        if name.startswith("compile_"):
            return getattr(self.outer, name)
        raise AttributeError(name)


def key_lookup(expr, scope):
    """Compiled source of the event-side value of `Table.key == value`, or None."""
    table = scope.table
    if not table.indexed or expr is None:
        return None

    def side(v):
        return "table" if scope.is_table_var(v) else "event"

    pairs, _ = equi_split(expr, side, probe="event", stored="table")
    for stored, probe in pairs:
        if stored.name == table.key_name:
            return compile_expression(probe, scope.outer)
    return None


def compile_table_condition(expr, table, outer):
    """`(cond(t, *rowvars), probe or None)` for a condition over a table row: the probe is
    the table backend's narrowing (see cep.engine.table.base)."""
    scope = TableScope(table, outer)
    args = ", ".join(scope.row_vars)
    cond = None
    if expr is not None:
        c = compile_expression(expr, scope)
        if c.type not in (AttrType.BOOL, AttrType.OBJECT):
            raise TypeMismatchError(
                f"a table condition must be a bool expression, not {c.type}",
                getattr(expr, "span", None),
            )
        cond = make_function("cond", f"def cond(t, {args}):\n    return {c.source}\n", c.globals)
    probe = table.compile_probe(
        expr, scope.is_table_var, lambda e: compile_expression(e, outer), scope.row_vars
    )
    return cond, probe


def compile_in_table(e, gen, outer, tables):
    """Codegen for `condition in Table` (an InTable node) against the event scope `outer`."""
    table = tables.get(e.table)
    if table is None:
        raise UnknownStreamError(f"'in {e.table}': no table named '{e.table}' is defined", e.span)
    scope = TableScope(table, outer)
    c = compile_expression(e.condition, scope)
    args = ", ".join(scope.row_vars)
    name = f"_in{next(_ids)}"
    g = {}
    k = None
    if table.indexed or not hasattr(table, "find"):
        k = key_lookup(e.condition, scope)
        cands = f"T.candidates({k.source}, True)" if k is not None else "T.candidates(None, False)"
        g.update(k.globals if k else {})
    else:  # a backend's own probe: T.find(probe, its values from the event)
        probe = table.compile_probe(
            e.condition, scope.is_table_var, lambda x: compile_expression(x, outer), scope.row_vars
        )
        values = table.probe_values(probe)
        cands = f"T.find(P, V({args}))" if values is not None else "T.find(None, None)"
        g.update({"P": probe, "V": values})
    if k is not None and table.indexed and isinstance(getattr(table, "rows", None), dict):
        # one row at most: read it from the key's dict (looked up per call: a restore
        # replaces the dict)
        src = (
            f"def {name}({args}):\n"
            f"    t = T.rows.get({k.source})\n"
            "    if t is None:\n"
            "        return False\n"
            "    try:\n"
            f"        return bool({c.source})\n"
            "    except FALLBACK:\n"
            "        return False\n"
        )
        g = {**c.globals, **g, "T": table, "FALLBACK": FALLBACK_ERRORS}
        fn = make_function(name, src, g)
        call = f"{name}({args})"
        return Compiled(call, call, AttrType.BOOL, {name: fn}, nullable=False)
    src = (
        f"def {name}({args}):\n"
        f"    for t in {cands}:\n"
        "        try:\n"
        f"            if {c.source}:\n"
        "                return True\n"
        "        except FALLBACK:\n"
        "            pass\n"
        "    return False\n"
    )
    g = {**c.globals, **g, "T": table, "FALLBACK": FALLBACK_ERRORS}
    fn = make_function(name, src, g)
    call = f"{name}({args})"
    return Compiled(call, call, AttrType.BOOL, {name: fn}, nullable=False)
