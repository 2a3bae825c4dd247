"""Type inference of expressions, with Siddhi's (Java's) rules.

`expression_type(expr, scope, aggregates=False, tables=None)` returns the AttrType of `expr` or
raises a positioned error (TypeMismatchError, UnknownFunctionError, UnknownAttributeError, ...).
`scope` resolves attribute references (see cep.compiler.scope); `tables` maps table ids to
TableDefinitions for `cond in Table`; `aggregates` allows sum(), avg(), ... (select and having),
whose arguments are typed in `aggregate_scope` when given (having sees the output row, but its
aggregators read the input)."""

from cep.catalog import aggregators, ext, ext_processors, rules, scripts
from cep.catalog import plugins  # noqa: F401  (installs the plug-in loader the catalog calls)
from cep.compiler.scope import AttributeScope, CompositeScope
from cep.errors import (
    InvalidQueryError,
    TypeMismatchError,
    UnknownStreamError,
)
from cep.model import AttrType, NUMERIC_TYPES

INT_MIN, INT_MAX = -(2**31), 2**31 - 1
_OP_WORDS = {"+": "add", "-": "subtract", "*": "multiply", "/": "divide", "%": "take modulo of"}


def expression_type(expr, scope, aggregates=False, tables=None, aggregate_scope=None):
    """The AttrType of `expr` in `scope` (see module docstring)."""
    return _Typer(scope, aggregates, tables or {}, aggregate_scope).type_of(expr)


def require_bool(expr, scope, what, aggregates=False, tables=None, aggregate_scope=None):
    """Type `expr` and demand a bool (filters, having, on, partition ranges)."""
    found = expression_type(expr, scope, aggregates, tables, aggregate_scope)
    if found is not AttrType.BOOL:
        raise TypeMismatchError(
            f"{what} must be a bool condition, but its type is {found}", getattr(expr, "span", None)
        )
    return found


class _Typer:
    """One inference pass over an expression tree."""

    def __init__(self, scope, aggregates, tables, aggregate_scope=None):
        self.scope = scope
        self.aggregate_scope = aggregate_scope or scope
        self.aggregates = aggregates
        self.tables = tables

    def type_of(self, expr):
        # dispatch on the node class name: _Constant, _Variable, _BinaryOp, ...
        method = getattr(self, "_" + type(expr).__name__, None)
        if method is None:
            raise InvalidQueryError(f"cannot type expression {expr!r}", getattr(expr, "span", None))
        found = method(expr)
        expr.resolve(found)  # the typed plan: the engine reads rtype (and entry) back
        return found

    def _Constant(self, expr):
        if expr.type is AttrType.INT and not INT_MIN <= expr.value <= INT_MAX:
            raise TypeMismatchError(
                f"int literal {expr.value} is out of the int range; write {expr.value}L for a long",
                expr.span,
            )
        return expr.type

    def _TimeConstant(self, expr):
        return AttrType.LONG

    def _Variable(self, expr):
        return self.scope.resolve(expr)

    def _BinaryOp(self, expr):
        left, right = self.type_of(expr.left), self.type_of(expr.right)
        if left not in NUMERIC_TYPES or right not in NUMERIC_TYPES:
            raise TypeMismatchError(
                f"cannot {_OP_WORDS[expr.op]} {left} and {right}: '{expr.op}' needs numbers "
                f"(SiddhiQL has no string '+')",
                expr.span,
            )
        return rules.widest(left, right)

    def _CompareOp(self, expr):
        left, right = self.type_of(expr.left), self.type_of(expr.right)
        if left in NUMERIC_TYPES and right in NUMERIC_TYPES:
            return AttrType.BOOL
        if expr.op in ("==", "!=") and (left == right or AttrType.OBJECT in (left, right)):
            return AttrType.BOOL
        if left == right:
            raise TypeMismatchError(
                f"{left} values cannot be compared with '{expr.op}' (only == and !=)", expr.span
            )
        raise TypeMismatchError(f"{left} cannot be compared with {right}", expr.span)

    def _logical(self, expr, word, operands):
        for operand in operands:
            found = self.type_of(operand)
            if found is not AttrType.BOOL:
                raise TypeMismatchError(
                    f"'{word}' needs bool operands, but one is {found}", operand.span
                )
        return AttrType.BOOL

    def _And(self, expr):
        return self._logical(expr, "and", (expr.left, expr.right))

    def _Or(self, expr):
        return self._logical(expr, "or", (expr.left, expr.right))

    def _Not(self, expr):
        return self._logical(expr, "not", (expr.operand,))

    def _Negate(self, expr):
        found = self.type_of(expr.operand)
        if found not in NUMERIC_TYPES:
            raise TypeMismatchError(f"cannot negate a {found}", expr.span)
        return found

    def _IsNull(self, expr):
        self.type_of(expr.operand)
        return AttrType.BOOL

    def _IsNullStream(self, expr):
        if not self.scope.has_reference(expr.stream):
            raise UnknownStreamError(
                f"'{expr.stream}' is not a pattern state of this query", expr.span
            )
        return AttrType.BOOL

    def _InTable(self, expr):
        table = self.tables.get(expr.table)
        if table is None:
            raise UnknownStreamError(
                f"'{expr.table}' in '... in {expr.table}' is not a defined table", expr.span
            )
        table_scope = AttributeScope((table.id,), table.attributes, f"table '{table.id}'")
        inner = _Typer(CompositeScope((self.scope, table_scope)), False, self.tables)
        found = inner.type_of(expr.condition)
        if found is not AttrType.BOOL:
            raise TypeMismatchError(
                f"the condition of 'in {expr.table}' must be bool, not {found}", expr.condition.span
            )
        return AttrType.BOOL

    def _FunctionCall(self, expr):
        aggregator = aggregators.lookup(expr.name, expr.namespace)
        if aggregator is not None:
            return self._aggregate(expr, aggregator)
        function = ext.find_function(expr.name, expr.namespace) or ext_processors.lookup_function(
            expr.namespace, expr.name
        )
        kind = "function"
        if function is None and not expr.namespace:
            function, kind = scripts.lookup(expr.name), "script"
        if function is None:
            raise ext.unknown_function_error(expr.name, expr.namespace, expr.span)
        types = [self.type_of(a) for a in expr.args]
        if expr.namespace:
            ext.check_arity(function, expr, expr.namespace)
        else:
            rules.check_arity(function, expr)
        found = function.rule(types, expr)
        expr.resolve(found, (kind, expr.namespace, function.name))
        return found

    def _aggregate(self, expr, entry):
        if not self.aggregates:
            raise InvalidQueryError(
                f"aggregator {expr.name}() is only allowed in select and having", expr.span
            )
        inner = _Typer(self.aggregate_scope, False, self.tables)
        types = [inner.type_of(a) for a in expr.args]
        rules.check_arity(entry, expr)
        found = entry.rule(types, expr)
        expr.resolve(found, ("aggregator", expr.namespace, entry.name))
        return found
