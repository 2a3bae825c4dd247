"""Event tables: `define table`, table outputs of queries, and `cond in Table`.

Entry points for the runtime (see cep/engine/DESIGN.md): `build_table(definition, ctx)` and
`build_table_output(query, ctx, out_def)`."""

from cep.engine.expressions import SingleStreamScope, compile_expression, make_function
from cep.engine.table.conditions import compile_in_table, compile_table_condition
from cep.engine.table.outputs import TableDelete, TableInsert, TableUpdate
from cep.engine.table.store import Table
from cep.engine.table.base import EventTable
from cep.errors import AnnotationError, InvalidQueryError, TypeMismatchError, UnknownAttributeError
from cep.model import DeleteFrom, InsertInto, UpdateOrInsert, UpdateTable
from cep.model.table_store import store_spec

__all__ = ["EventTable", "Table", "build_table", "build_table_output", "compile_in_table"]


class _TableState:
    """Snapshot adapter: a table registered as a stateful runtime element."""

    def __init__(self, table):
        self.table = table

    def get_state(self):
        return self.table.get_state()

    def set_state(self, state):
        self.table.set_state(state)


def build_table(definition, ctx):
    """The table backend its annotations ask for: in memory (registered for snapshots), or
    a database table (`@from(eventtable='rdbms')` / `@store(type='rdbms')`, not snapshotted:
    its rows live in the database)."""
    spec = store_spec(definition)
    if spec is None:
        table = Table(definition)
        ctx.register(f"table:{definition.id}", _TableState(table))
        return table
    from cep.engine.table.rdbms import RdbmsTable
    from cep.policy.datasources import datasource
    from cep.policy.exceptions import PolicyViolation

    try:
        ds = datasource(spec.datasource)
    except PolicyViolation as exc:
        raise AnnotationError(
            f"@{spec.annotation.name} on table '{definition.id}': {exc}", spec.annotation.span
        ) from None
    return RdbmsTable(definition, spec, ds)


def build_table_output(query, ctx, out_def):
    """The processor that applies a query's output rows to its target table."""
    out = query.output
    table = ctx.tables[out.target]
    names = [a.name for a in out_def.attributes]
    refs = [getattr(query.input, "stream_id", None), getattr(query.input, "alias", None)]
    scope = SingleStreamScope(out_def, refs)  # the output row, as `r`
    if isinstance(out, InsertInto):
        return TableInsert(table, _insert_order(table, out_def, out))
    cond, key = compile_table_condition(out.on, table, scope)
    if isinstance(out, DeleteFrom):
        return TableDelete(table, cond, key)
    setter = _setter(table, out, scope, names)
    insert_row = None
    if isinstance(out, UpdateOrInsert):
        order = _insert_order(table, out_def, out)
        insert_row = (lambda r: r) if order is None else (lambda r: tuple(r[i] for i in order))
    if isinstance(out, (UpdateTable, UpdateOrInsert)):
        return TableUpdate(table, cond, key, setter, insert_row)
    raise InvalidQueryError(f"unsupported table output {type(out).__name__}", out.span)


def _insert_order(table, out_def, out):
    """None when the output matches the table's columns; raises on a schema mismatch."""
    tdef = table.definition
    got = [(a.name, a.type) for a in out_def.attributes]
    want = [(a.name, a.type) for a in tdef.attributes]
    if got == want:
        return None
    if sorted(got) == sorted(want):
        return [got.index(w) for w in want]
    fmt = lambda xs: ", ".join(f"{n} {t}" for n, t in xs)  # noqa: E731
    raise TypeMismatchError(
        f"the output of the query ({fmt(got)}) does not match table '{tdef.id}' ({fmt(want)})",
        out.span,
    )


def _setter(table, out, scope, names):
    """`setter(t, r)`: the updated table row from the old row `t` and the output row `r`."""
    tdef = table.definition
    cols = [f"t[{i}]" for i in range(len(tdef.attributes))]
    g = {}
    if out.assignments:
        from cep.engine.table.conditions import TableScope

        tscope = TableScope(table, scope)
        for var, expr in out.assignments:
            i = tdef.index_of(var.name)
            if i < 0:
                raise UnknownAttributeError(
                    f"table '{tdef.id}' has no attribute '{var.name}'", var.span
                )
            c = compile_expression(expr, tscope)
            cols[i] = c.source
            g.update(c.globals)
    else:
        for j, name in enumerate(names):
            i = tdef.index_of(name)
            if i >= 0:
                cols[i] = f"r[{j}]"
    src = f"def setter(t, r):\n    return ({', '.join(cols)},)\n"
    return make_function("setter", src, g)
