"""Validation of one query: its selector (output types), and its output (insert, table ops)."""

from cep.compiler.input_checks import input_scope
from cep.compiler.scope import AttributeScope, CompositeScope, HavingScope
from cep.compiler.types import expression_type, require_bool
from cep.errors import (
    DuplicateDefinitionError,
    InvalidQueryError,
    TypeMismatchError,
    UnknownAttributeError,
    UnknownStreamError,
)
from cep.model import (
    Attribute,
    DeleteFrom,
    InsertInto,
    JoinInputStream,
    StateInputStream,
    StreamDefinition,
    TableDefinition,
)


def check_query(query, ctx):
    """Check `query` against the definitions in `ctx`; register the stream it infers."""
    scope, star_attributes = input_scope(query.input, ctx)
    outputs = selector_attributes(query.selector, scope, star_attributes, ctx)
    output_scope = AttributeScope((), outputs, "the query's output")
    having_scope = output_scope
    if isinstance(query.input, (JoinInputStream, StateInputStream)):
        having_scope = HavingScope(output_scope, scope)
    _check_selector_rest(query.selector, scope, output_scope, having_scope, ctx)
    _check_output(query, outputs, output_scope, ctx)
    return outputs


def selector_attributes(selector, scope, star_attributes, ctx):
    """The output attributes (name and inferred type) of a selector."""
    if selector.select_all:
        return tuple(Attribute(a.name, a.type, a.span) for a in star_attributes)
    outputs, seen = [], set()
    for out in selector.attributes:
        if out.rename in seen:
            raise DuplicateDefinitionError(
                f"output attribute '{out.rename}' is selected twice", out.span
            )
        seen.add(out.rename)
        found = expression_type(out.expression, scope, aggregates=True, tables=ctx.tables)
        outputs.append(Attribute(out.rename, found, out.span))
    return tuple(outputs)


def _check_selector_rest(selector, scope, output_scope, having_scope, ctx):
    """group by reads the input; order by reads the output row and having `having_scope` (the
    output row; in a join or pattern also the input, as in Siddhi); the aggregators inside
    having read the input."""
    for variable in selector.group_by:
        expression_type(variable, scope)
    if selector.having is not None:
        require_bool(
            selector.having,
            having_scope,
            "having",
            aggregates=True,
            tables=ctx.tables,
            aggregate_scope=scope,
        )
    for item in selector.order_by:
        expression_type(item.variable, output_scope)


def _check_output(query, outputs, output_scope, ctx):
    output = query.output
    if isinstance(output, InsertInto):
        _check_insert(output, outputs, ctx)
        return
    table = ctx.tables.get(output.target)
    if table is None:
        kind = "a stream" if ctx.is_stream(output.target) else "not defined"
        raise UnknownStreamError(
            f"'{output.target}' is {kind}: delete, update and 'insert overwrite' need a table",
            output.span,
        )
    table_scope = AttributeScope((table.id,), table.attributes, f"table '{table.id}'")
    condition_scope = CompositeScope((output_scope, table_scope))
    require_bool(output.on, condition_scope, "the 'on' condition", tables=ctx.tables)
    if isinstance(output, DeleteFrom):
        return
    if output.assignments:
        _check_assignments(output, table_scope, condition_scope, ctx)
    elif type(output).__name__ == "UpdateOrInsert":
        match_definition(table, outputs, output.span, "table")
    else:
        _check_update_columns(table, outputs)


def _check_assignments(output, table_scope, value_scope, ctx):
    for variable, value in output.assignments:
        column = table_scope.resolve(variable)
        found = expression_type(value, value_scope, tables=ctx.tables)
        if found != column and not _widens(found, column):
            raise TypeMismatchError(
                f"cannot set {column} column '{variable.name}' to a {found}", value.span
            )


def _check_update_columns(table, outputs):
    for out in outputs:
        index = table.index_of(out.name)
        if index < 0:
            raise UnknownAttributeError(
                f"update of table '{table.id}': it has no column '{out.name}'", out.span
            )
        column = table.attributes[index].type
        if out.type != column:
            raise TypeMismatchError(
                f"update of table '{table.id}': column '{out.name}' is "
                f"{column}, the query gives {out.type}",
                out.span,
            )


def _widens(source, target):
    order = ("int", "long", "float", "double")
    return (
        source.value in order
        and target.value in order
        and order.index(source.value) <= order.index(target.value)
    )


def _check_insert(output, outputs, ctx):
    if output.inner:
        ctx.insert_inner(output, outputs)
        return
    existing = ctx.tables.get(output.target) or ctx.streams.get(output.target)
    if output.target in ctx.triggers:
        raise InvalidQueryError(f"cannot insert into trigger '{output.target}'", output.span)
    if existing is None:
        ctx.infer_stream(StreamDefinition(output.target, outputs, span=output.span))
        return
    kind = "table" if isinstance(existing, TableDefinition) else "stream"
    match_definition(existing, outputs, output.span, kind)


def match_definition(definition, outputs, span, kind):
    """The query's output must fit the target's definition: same count, same types."""
    have = ", ".join(f"{a.name} {a.type}" for a in outputs)
    want = ", ".join(f"{a.name} {a.type}" for a in definition.attributes)
    if len(outputs) != len(definition.attributes):
        raise DuplicateDefinitionError(
            f"the query's output ({have}) does not match {kind} '{definition.id}' ({want}): "
            f"{len(outputs)} attributes instead of {len(definition.attributes)}",
            span,
        )
    for out, attr in zip(outputs, definition.attributes):
        if out.type != attr.type:
            raise TypeMismatchError(
                f"the query's output ({have}) does not match {kind} '{definition.id}' "
                f"({want}): '{out.name}' is {out.type}, '{attr.name}' is {attr.type}",
                span,
            )
