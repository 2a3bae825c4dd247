"""Translate a table condition to an SQLAlchemy Core WHERE clause, as far as it translates.

Table attributes become columns; everything the event side computes (its attributes, constants,
functions of them) becomes a bound parameter whose value the engine computes per event, so
the statement is compiled once and never carries event text. What translates:
- comparisons `== < <= > >=` of numbers, and `==` of strings and of bools (string order
  depends on the database's collation, so `<` of strings stays in the engine);
- `and` (the conjuncts that translate; the rest narrows nothing), `or` and `not` (only when
  their operands translate whole; `not` counts a null comparison as false, as the engine does);
- `+ - *` and unary minus over numbers (`/` and `%` stay in the engine: a division by zero is
  an error in PostgreSQL and a null in SQLite).
The result only narrows the candidate rows: the engine evaluates the whole condition on each
row it reads, so SQL's null logic or an untranslated part never changes a result."""

from dataclasses import dataclass, field

from sqlalchemy import (
    Boolean,
    BigInteger,
    Float,
    Integer,
    String,
    and_,
    bindparam,
    false,
    func,
    not_,
    or_,
)

from cep.model import AttrType
from cep.model.expressions import (
    And,
    BinaryOp,
    CompareOp,
    Constant,
    Expression,
    FunctionCall,
    IsNull,
    Negate,
    Not,
    Or,
    TimeConstant,
    Variable,
)

NUMERIC = (AttrType.INT, AttrType.LONG, AttrType.FLOAT, AttrType.DOUBLE)
_ORDER = (AttrType.INT, AttrType.LONG, AttrType.FLOAT, AttrType.DOUBLE)


def sql_type(t: AttrType):
    """The column type of a Siddhi attribute type (float is stored as a double so a value
    reads back exactly as the engine holds it)."""
    return {
        AttrType.STRING: String,
        AttrType.INT: Integer,
        AttrType.LONG: BigInteger,
        AttrType.FLOAT: Float(53),
        AttrType.DOUBLE: Float(53),
        AttrType.BOOL: Boolean,
    }[t]


@dataclass
class Pushed:
    """A translated condition: `where` with parameters p0..pn computed from `event_exprs`."""

    where: object
    event_exprs: list = field(default_factory=list)


class Translator:
    def __init__(self, columns, definition, is_table_var, compile_event):
        self.columns = columns
        self.definition = definition
        self.is_table_var = is_table_var
        self.compile_event = compile_event
        self.params = []  # compiled event-side expressions, one per bound parameter

    def condition(self, expr, strict=False):
        if isinstance(expr, And):
            left = self.condition(expr.left, strict)
            right = self.condition(expr.right, strict)
            if left is None or right is None:
                return None if strict else (left if right is None else right)
            return and_(left, right)
        if isinstance(expr, Or):
            left = self.condition(expr.left, True)
            right = self.condition(expr.right, True) if left is not None else None
            return None if right is None else or_(left, right)
        if isinstance(expr, Not):
            inner = self.condition(expr.operand, True)
            return None if inner is None else not_(func.coalesce(inner, false()))
        if isinstance(expr, CompareOp):
            return self._compare(expr)
        return None

    def _compare(self, expr):
        if expr.op not in ("==", "<", "<=", ">", ">="):
            return None
        left, right = self.term(expr.left), self.term(expr.right)
        if left is None or right is None or not (left[2] or right[2]):
            return None  # untranslatable, or no table attribute in it
        lt, rt = left[1], right[1]
        if lt in NUMERIC and rt in NUMERIC:
            pass
        elif expr.op != "==" or lt != rt or lt not in (AttrType.STRING, AttrType.BOOL):
            return None
        a, b = left[0], right[0]
        return {"==": a == b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[expr.op]

    def term(self, expr):
        """(sql expression, type, reads the table) or None."""
        if not _reads_table(expr, self.is_table_var):
            return self._event_param(expr)
        if isinstance(expr, Variable):
            i = self.definition.index_of(expr.name)
            if i < 0 or expr.index is not None:
                return None
            return self.columns[i], self.definition.attributes[i].type, True
        if isinstance(expr, BinaryOp) and expr.op in ("+", "-", "*"):
            left, right = self.term(expr.left), self.term(expr.right)
            if left is None or right is None or left[1] not in NUMERIC or right[1] not in NUMERIC:
                return None
            a, b = left[0], right[0]
            out = {"+": a + b, "-": a - b, "*": a * b}[expr.op]
            return out, max(left[1], right[1], key=_ORDER.index), True
        if isinstance(expr, Negate):
            inner = self.term(expr.operand)
            if inner is None or inner[1] not in NUMERIC:
                return None
            return -inner[0], inner[1], True
        return None

    def _event_param(self, expr):
        if isinstance(expr, Constant) and expr.value is None:
            return None
        if isinstance(expr, TimeConstant):
            return None
        try:
            c = self.compile_event(expr)
        except Exception:  # noqa: BLE001 - not an event-side expression: leave it to the engine
            return None
        if c.type not in (*NUMERIC, AttrType.STRING, AttrType.BOOL):
            return None
        name = f"p{len(self.params)}"
        self.params.append(c)
        return bindparam(name, type_=sql_type(c.type)), c.type, False


def _reads_table(expr, is_table_var):
    if isinstance(expr, Variable):
        return is_table_var(expr)
    if isinstance(expr, (BinaryOp, CompareOp, And, Or)):
        return _reads_table(expr.left, is_table_var) or _reads_table(expr.right, is_table_var)
    if isinstance(expr, (Not, Negate, IsNull)):
        return _reads_table(expr.operand, is_table_var)
    if isinstance(expr, FunctionCall):
        return any(_reads_table(a, is_table_var) for a in expr.args)
    if isinstance(expr, (Constant, TimeConstant)):
        return False
    return isinstance(expr, Expression)  # anything else: treat as the table's (not pushed)


def translate(expr, columns, definition, is_table_var, compile_event):
    """Pushed(where, event_exprs) for the translatable part of `expr`, or None."""
    if expr is None:
        return None
    t = Translator(columns, definition, is_table_var, compile_event)
    where = t.condition(expr)
    return None if where is None else Pushed(where, t.params)
