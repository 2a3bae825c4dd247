"""Parse-tree callbacks for expressions (a Transformer mixin): literals, operators, references."""

from lark import Token, Transformer, v_args

from cep.compiler import literals
from cep.model import (
    And,
    AttrType,
    BinaryOp,
    CompareOp,
    Constant,
    FunctionCall,
    InTable,
    IsNull,
    IsNullStream,
    Negate,
    Not,
    Or,
    Span,
    TimeConstant,
    Variable,
)


def meta_span(meta):
    """The Span of a parse-tree node from its lark meta."""
    if getattr(meta, "empty", True):
        return Span(0, 0, 0, 0)
    return Span(
        meta.line, meta.column, meta.end_line, meta.end_column, meta.start_pos, meta.end_pos
    )


def _binary(cls, op=None):
    def build(self, meta, children):
        left, right = children
        if op is None:
            return cls(left, right, meta_span(meta))
        return cls(op, left, right, meta_span(meta))

    return build


@v_args(meta=True)
class ExpressionBuilder(Transformer):
    """Transformer callbacks for the expression rules; `self.text` is the plan text."""

    # -- names --
    def name(self, meta, children):
        token = children[0]
        return Token.new_borrow_pos(token.type, literals.unquote_name(token), token)

    # -- operators --
    or_op = _binary(Or)
    and_op = _binary(And)
    cmp_eq = _binary(CompareOp, "==")
    cmp_ne = _binary(CompareOp, "!=")
    cmp_gt = _binary(CompareOp, ">")
    cmp_lt = _binary(CompareOp, "<")
    cmp_ge = _binary(CompareOp, ">=")
    cmp_le = _binary(CompareOp, "<=")
    op_add = _binary(BinaryOp, "+")
    op_sub = _binary(BinaryOp, "-")
    op_mul = _binary(BinaryOp, "*")
    op_div = _binary(BinaryOp, "/")
    op_mod = _binary(BinaryOp, "%")

    def in_table(self, meta, children):
        condition, table = children
        return InTable(condition, str(table), meta_span(meta))

    def not_op(self, meta, children):
        return Not(children[0], meta_span(meta))

    def negate(self, meta, children):
        operand = children[0]
        span = meta_span(meta)
        if isinstance(operand, Constant) and operand.type in (
            AttrType.INT,
            AttrType.LONG,
            AttrType.FLOAT,
            AttrType.DOUBLE,
        ):
            return Constant(-operand.value, operand.type, span)
        if isinstance(operand, TimeConstant):
            return TimeConstant(-operand.millis, span)
        return Negate(operand, span)

    def is_null(self, meta, children):
        return IsNull(children[0], meta_span(meta))

    def is_null_indexed(self, meta, children):
        stream, index = children
        return IsNullStream(str(stream), index, meta_span(meta))

    # -- functions --
    def function_call(self, meta, children):
        namespace, name, args = children
        return FunctionCall(
            str(name),
            tuple(args or ()),
            str(namespace) if namespace is not None else None,
            meta_span(meta),
        )

    def args(self, meta, children):
        return tuple(children)

    def star(self, meta, children):
        return ()

    # -- attribute references --
    def var(self, meta, children):
        return Variable(str(children[0]), span=meta_span(meta))

    def qualified_var(self, meta, children):
        stream, name = children
        return Variable(str(name), str(stream), span=meta_span(meta))

    def inner_var(self, meta, children):
        stream, name = children
        return Variable(str(name), str(stream), inner=True, span=meta_span(meta))

    def indexed_var(self, meta, children):
        stream, index, name = children
        return Variable(str(name), str(stream), index, span=meta_span(meta))

    def index_int(self, meta, children):
        return int(str(children[0]))

    def index_last(self, meta, children):
        return ("last", 0)

    def index_last_minus(self, meta, children):
        return ("last", int(str(children[-1])))

    # -- literals --
    def int_lit(self, meta, children):
        return Constant(literals.parse_int(children[0], self.text), AttrType.INT, meta_span(meta))

    def long_lit(self, meta, children):
        return Constant(literals.parse_long(children[0], self.text), AttrType.LONG, meta_span(meta))

    def float_lit(self, meta, children):
        return Constant(literals.parse_float(children[0]), AttrType.FLOAT, meta_span(meta))

    def double_lit(self, meta, children):
        return Constant(literals.parse_double(children[0]), AttrType.DOUBLE, meta_span(meta))

    def string_lit(self, meta, children):
        return Constant(literals.unquote_string(children[0]), AttrType.STRING, meta_span(meta))

    def true_lit(self, meta, children):
        return Constant(True, AttrType.BOOL, meta_span(meta))

    def false_lit(self, meta, children):
        return Constant(False, AttrType.BOOL, meta_span(meta))

    def null_lit(self, meta, children):
        return Constant(None, AttrType.OBJECT, meta_span(meta))

    def time_value(self, meta, children):
        return TimeConstant(sum(children), meta_span(meta))

    def time_part(self, meta, children):
        amount, unit = children
        return literals.time_part_millis(amount, unit)
