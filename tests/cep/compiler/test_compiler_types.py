"""Type inference: Java's numeric promotion, aggregator and function result types."""

import pytest

import cep
from cep.compiler import expression_type
from cep.compiler.scope import AttributeScope
from cep.errors import TypeMismatchError, UnknownAttributeError
from cep.model import Attribute, AttrType

S = "define stream S (i int, l long, f float, d double, s string, b bool, o object, i2 int);\n"
T = AttrType


def out_type(expr):
    plan = cep.compile(S + f"from S#window.length(3) select {expr} as x insert into Out;")
    return plan.stream("Out").attributes[0].type


@pytest.mark.parametrize(
    "expr,expected",
    [
        ("i + i2", T.INT),
        ("i + l", T.LONG),
        ("l * i", T.LONG),
        ("f * i", T.FLOAT),
        ("f + l", T.FLOAT),
        ("i + d", T.DOUBLE),
        ("f / d", T.DOUBLE),
        ("i % i2", T.INT),
        ("i / i2", T.INT),
        ("-i", T.INT),
        ("-(f)", T.FLOAT),
        ("10 sec", T.LONG),
        ("i > l", T.BOOL),
        ("s == 'x'", T.BOOL),
        ("b == true", T.BOOL),
        ("not b", T.BOOL),
        ("b and i > 1", T.BOOL),
        ("s is null", T.BOOL),
        ("1.5f", T.FLOAT),
        ("2L", T.LONG),
        ("o == null", T.BOOL),
    ],
)
def test_operator_types(expr, expected):
    assert out_type(expr) is expected


@pytest.mark.parametrize(
    "expr,expected",
    [
        ("sum(i)", T.LONG),
        ("sum(l)", T.LONG),
        ("sum(f)", T.DOUBLE),
        ("sum(d)", T.DOUBLE),
        ("avg(i)", T.DOUBLE),
        ("avg(f)", T.DOUBLE),
        ("count()", T.LONG),
        ("min(i)", T.INT),
        ("max(f)", T.FLOAT),
        ("min(l)", T.LONG),
        ("stddev(i)", T.DOUBLE),
        ("distinctcount(s)", T.LONG),
        ("minForever(d)", T.DOUBLE),
        ("maxForever(i)", T.INT),
        ("sum(i) * 2", T.LONG),
        ("avg(i) + sum(l)", T.DOUBLE),
    ],
)
def test_aggregator_types(expr, expected):
    assert out_type(expr) is expected


@pytest.mark.parametrize(
    "expr,expected",
    [
        ("coalesce(s, 'x')", T.STRING),
        ("convert(d, 'int')", T.INT),
        ("convert(s, 'bool')", T.BOOL),
        ("cast(o, 'double')", T.DOUBLE),
        ("ifThenElse(b, i, i2)", T.INT),
        ("instanceOfString(o)", T.BOOL),
        ("instanceOfInteger(i)", T.BOOL),
        ("maximum(i, i2, 3)", T.INT),
        ("minimum(d, 1.0)", T.DOUBLE),
        ("UUID()", T.STRING),
        ("currentTimeMillis()", T.LONG),
        ("eventTimestamp()", T.LONG),
        ("default(s, 'none')", T.STRING),
    ],
)
def test_function_types(expr, expected):
    assert out_type(expr) is expected


@pytest.mark.parametrize(
    "expr",
    [
        "s + s",
        "b + 1",
        "avg(s)",
        "min(s)",
        "stddev(b)",
        "s > 'a'",
        "i == s",
        "not i",
        "ifThenElse(i, 1, 2)",
        "maximum(i, d)",
        "convert(d, s)",
        "coalesce()",
        "currentTimeMillis(1)",
        "-s",
        "default(i, 'x')",
    ],
)
def test_type_errors(expr):
    with pytest.raises(TypeMismatchError):
        out_type(expr)


def test_expression_type_helper_for_the_engine():
    plan = cep.compile(S + "from S[i > 1 and d < 2.0] select i insert into O;")
    condition = plan.queries[0].input.handlers[0].expression
    scope = AttributeScope(("S",), plan.stream("S").attributes, "stream 'S'")
    assert expression_type(condition, scope) is AttrType.BOOL
    assert expression_type(condition.right.left, scope) is AttrType.DOUBLE
    other = AttributeScope(("X",), (Attribute("z", AttrType.INT),), "stream 'X'")
    with pytest.raises(UnknownAttributeError):
        expression_type(condition, other)
