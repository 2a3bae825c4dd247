"""Parse-tree callbacks for selectors, outputs, rate limits and partitions (a Transformer mixin)."""

import dataclasses

from lark import Transformer, v_args

from cep.compiler import literals
from cep.compiler.expression_builder import meta_span
from cep.compiler.input_checks import state_streams
from cep.errors import SiddhiQLSyntaxError
from cep.model import (
    DeleteFrom,
    Expression,
    InsertInto,
    IsNull,
    IsNullStream,
    OrderByAttribute,
    OutputAttribute,
    OutputRate,
    Partition,
    Query,
    RangeCondition,
    RangePartitionKey,
    Selector,
    StateInputStream,
    UpdateOrInsert,
    UpdateTable,
    ValuePartitionKey,
    Variable,
)


def _state_null_checks(selector, state_input):
    """`e1 is null` on a pattern state alias is a state null check (IsNullStream), not an
    attribute null check."""
    aliases = {s.stream.alias for s in state_streams(state_input.state) if s.stream.alias}

    def fix(expr):
        if isinstance(expr, IsNull) and isinstance(expr.operand, Variable):
            v = expr.operand
            if v.stream is None and v.index is None and v.name in aliases:
                return IsNullStream(v.name, None, expr.span)
        if not dataclasses.is_dataclass(expr):
            return expr
        changes = {
            f.name: _fix_value(getattr(expr, f.name), fix)
            for f in dataclasses.fields(expr)
            if f.name != "span"
        }
        return dataclasses.replace(expr, **changes)

    attributes = tuple(
        dataclasses.replace(a, expression=fix(a.expression)) for a in selector.attributes
    )
    having = fix(selector.having) if selector.having is not None else None
    return dataclasses.replace(selector, attributes=attributes, having=having)


def _fix_value(value, fix):
    if isinstance(value, tuple):
        return tuple(_fix_value(v, fix) for v in value)
    if isinstance(value, Expression):
        return fix(value)
    return value


@v_args(meta=True)
class QueryBuilder(Transformer):
    """Transformer callbacks for everything of a query after its input, and partitions."""

    # -- selector --
    def selector(self, meta, children):
        select, group_by, having, order_by, limit = children
        select_all = select == "*"
        if isinstance(select, OutputAttribute):
            select = (select,)
        return Selector(
            () if select_all else tuple(select),
            select_all,
            tuple(group_by or ()),
            having,
            tuple(order_by or ()),
            limit,
            meta_span(meta),
        )

    def select_all(self, meta, children):
        return "*"

    def select_list(self, meta, children):
        return tuple(children)

    def out_attr(self, meta, children):
        expression, alias = children
        span = meta_span(meta)
        if alias is not None:
            return OutputAttribute(str(alias), expression, span)
        if isinstance(expression, Variable):
            return OutputAttribute(expression.name, expression, span)
        raise SiddhiQLSyntaxError(
            "a computed select expression needs a name: add 'as <name>'", span, self.text
        )

    def group_by(self, meta, children):
        return tuple(children)

    def having(self, meta, children):
        return children[0]

    def order_by(self, meta, children):
        return tuple(children)

    def order_item(self, meta, children):
        variable, direction = children
        ascending = direction is None or direction.type == "ASC"
        return OrderByAttribute(variable, ascending)

    def limit(self, meta, children):
        return int(str(children[0]))

    # -- output rate --
    def rate_mode(self, meta, children):
        return str(children[0]).lower()

    def rate_events(self, meta, children):
        mode, count = children
        n = int(str(count))
        if n <= 0:
            raise SiddhiQLSyntaxError(
                "'output every N events' needs N > 0", literals.token_span(count), self.text
            )
        return OutputRate("events", n, mode or "all", meta_span(meta))

    def rate_time(self, meta, children):
        mode, period = children
        return OutputRate("time", self._period(period), mode or "all", meta_span(meta))

    def rate_snapshot(self, meta, children):
        return OutputRate("snapshot", self._period(children[0]), "all", meta_span(meta))

    def _period(self, period):
        if period.millis <= 0:
            raise SiddhiQLSyntaxError(
                "an output rate period must be positive", period.span, self.text
            )
        return period.millis

    # -- outputs --
    def event_type(self, meta, children):
        return str(children[0]).lower() if children else "current"

    def insert_into(self, meta, children):
        event_type, (target, inner) = children
        return InsertInto(str(target), event_type or "current", inner, meta_span(meta))

    def insert_overwrite(self, meta, children):
        (target, _), event_type, on = children
        return UpdateOrInsert(str(target), on, (), event_type or "current", meta_span(meta))

    def delete_from(self, meta, children):
        (target, _), event_type, on = children
        return DeleteFrom(str(target), on, event_type or "current", meta_span(meta))

    def update_table(self, meta, children):
        (target, _), event_type, assignments, on = children
        return UpdateTable(
            str(target), on, tuple(assignments or ()), event_type or "current", meta_span(meta)
        )

    def update_or_insert(self, meta, children):
        (target, _), event_type, assignments, on = children
        return UpdateOrInsert(
            str(target), on, tuple(assignments or ()), event_type or "current", meta_span(meta)
        )

    def set_clause(self, meta, children):
        return tuple(children)

    def assignment(self, meta, children):
        return (children[0], children[1])

    # -- queries and partitions --
    def query(self, meta, children):
        stream_input, selector, rate, output = children
        if selector is None:
            selector = Selector(select_all=True)
        elif isinstance(stream_input, StateInputStream):
            selector = _state_null_checks(selector, stream_input)
        return Query(stream_input, selector, output, rate, (), "", meta_span(meta))

    def value_key(self, meta, children):
        expression, stream = children
        return ValuePartitionKey(str(stream), expression, meta_span(meta))

    def range_key(self, meta, children):
        *ranges, stream = children
        return RangePartitionKey(str(stream), tuple(ranges), meta_span(meta))

    def range_cond(self, meta, children):
        condition, label = children
        return RangeCondition(condition, literals.unquote_string(label), meta_span(meta))

    def partition(self, meta, children):
        keys = tuple(c for c in children if isinstance(c, (ValuePartitionKey, RangePartitionKey)))
        items = [c for c in children[len(keys) :] if c is not None]
        queries = self.attach_annotations(items, inside_partition=True)
        return Partition(keys, tuple(queries), (), "", meta_span(meta))
