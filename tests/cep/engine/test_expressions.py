"""Expression codegen: Java semantics, null handling, fast path with safe fallback, functions."""

import pytest

from cep.engine.expressions import SingleStreamScope, compile_filter, compile_projection
from cep.errors import TypeMismatchError, UnknownAttributeError, UnknownFunctionError
from cep.model import (
    Attribute,
    AttrType,
    BinaryOp,
    CompareOp,
    Constant,
    FunctionCall,
    IsNull,
    Not,
    StreamDefinition,
    Variable,
)
from tests.cep.engine.helpers import collect, runtime

D = StreamDefinition(
    "S",
    (
        Attribute("a", AttrType.INT),
        Attribute("b", AttrType.INT),
        Attribute("x", AttrType.DOUBLE),
        Attribute("f", AttrType.FLOAT),
        Attribute("s", AttrType.STRING),
    ),
)
SCOPE = SingleStreamScope(D)
a, b, x, f, s = (Variable(n) for n in "abxfs")


def const(v, t):
    return Constant(v, t)


def project(expr, *rows):
    fn, types = compile_projection([expr], SCOPE)
    return [r[0] for _, r, _ in fn([(0, row, 0) for row in rows])]


def test_int_arithmetic_wraps_at_32_bits():
    assert project(BinaryOp("*", a, b), (65536, 65536, 0.0, 0.0, "")) == [0]
    assert project(BinaryOp("+", a, b), (2147483647, 1, 0.0, 0.0, "")) == [-2147483648]


def test_integer_division_and_modulo_follow_java():
    rows = [(-7, 2, 0.0, 0.0, ""), (7, -3, 0.0, 0.0, ""), (5, 0, 0.0, 0.0, "")]
    assert project(BinaryOp("/", a, b), *rows) == [-3, -2, None]
    assert project(BinaryOp("%", a, b), *rows) == [-1, 1, None]


def test_double_division_by_zero_is_null_and_the_batch_keeps_its_other_rows():
    rows = [(0, 0, 3.0, 0.0, ""), (0, 0, 0.0, 0.0, "")]
    assert project(BinaryOp("/", const(1.5, AttrType.DOUBLE), x), *rows) == [0.5, None]


def test_float_is_32_bit():
    assert project(BinaryOp("*", f, const(1, AttrType.INT)), (0, 0, 0.0, 0.1, "")) == [
        pytest.approx(0.10000000149011612, abs=0)
    ]


def test_null_propagates_through_arithmetic_and_comparisons_but_not_equal_are_false():
    rows = [(None, 1, 0.0, 0.0, ""), (3, 1, 0.0, 0.0, "")]
    assert project(BinaryOp("+", a, b), *rows) == [None, 4]
    keep = compile_filter(CompareOp("==", a, const(3, AttrType.INT)), SCOPE)
    assert [e[1][0] for e in keep([(0, r, 0) for r in rows])] == [3]
    keep = compile_filter(CompareOp("!=", a, const(3, AttrType.INT)), SCOPE)
    assert [e[1][0] for e in keep([(0, r, 0) for r in rows])] == [None]  # Siddhi 3.2
    keep = compile_filter(Not(CompareOp(">", a, const(5, AttrType.INT))), SCOPE)
    assert [e[1][0] for e in keep([(0, r, 0) for r in rows])] == [None, 3]


def test_is_null():
    keep = compile_filter(IsNull(s), SCOPE)
    assert len(keep([(0, (1, 1, 0.0, 0.0, None), 0), (0, (1, 1, 0.0, 0.0, "t"), 0)])) == 1


def test_type_errors_are_named():
    with pytest.raises(TypeMismatchError, match="string"):
        compile_filter(CompareOp(">", x, const("abc", AttrType.STRING)), SCOPE)
    with pytest.raises(TypeMismatchError, match="bool"):
        compile_filter(x, SCOPE)
    with pytest.raises(UnknownAttributeError, match="'qty'"):
        compile_filter(CompareOp(">", Variable("qty"), const(1, AttrType.INT)), SCOPE)
    with pytest.raises(UnknownFunctionError, match="frobnicate"):
        compile_projection([FunctionCall("frobnicate", (x,))], SCOPE)


@pytest.mark.parametrize(
    "call, value, want",
    [
        ("convert(d, 'string')", 3.75, "3.75"),
        ("convert(d, 'int')", -2.5, -2),
        ("convert(d, 'long')", 1e10, 10000000000),
        ("convert(t, 'int')", None, 42),
        ("convert(t, 'bool')", None, False),
        ("ifThenElse(d > 1.0, 'big', 'small')", 2.0, "big"),
        ("maximum(d, 4.0, 1.0)", 2.0, 4.0),
        ("minimum(d, 4.0, 1.0)", 2.0, 1.0),
        ("coalesce(n, d)", 2.0, 2.0),
        ("instanceOfDouble(d)", 2.0, True),
        ("instanceOfString(d)", 2.0, False),
        ("eventTimestamp()", 1.0, 1234),
    ],
)
def test_functions(call, value, want):
    rt = runtime(f"""@Plan:playback
        define stream S (d double, t string, n double);
        from S select {call} as v insert into O;""")
    got = collect(rt, ["O"])
    rt.input_handler("S").send((value, "42" if "int" in call else "no", None), 1234)
    assert got["O"] == [(1234, (want,))]


def test_uuid_and_current_time():
    rt = runtime("""@Plan:playback
        define stream S (d double);
        from S select UUID() as u, currentTimeMillis() as t insert into O;""")
    got = collect(rt, ["O"])
    rt.input_handler("S").send_batch([(5000, (1.0,)), (6000, (1.0,))])
    (t1, (u1, c1)), (t2, (u2, c2)) = got["O"]
    assert len(u1) == 36 and u1 != u2
    assert (c1, c2) == (5000, 6000)  # playback: the event time


def test_aggregates_without_a_window_run_forever():
    rt = runtime("""@Plan:playback
        define stream S (sym string, p double);
        from S select max(p) as hi, min(p) as lo, sum(p) as s, avg(p) as a, count() as c,
        stddev(p) as sd, distinctcount(sym) as dc insert into O;
        from S select sym, max(p) as hi, min(p) as lo group by sym insert into G;""")
    got = collect(rt, ["O", "G"])
    rt.input_handler("S").send_batch(
        [(1, ("A", 3.0)), (2, ("B", 1.0)), (3, ("A", 5.0)), (4, ("A", None))]
    )
    assert [r for _, r in got["O"]] == [
        (3.0, 3.0, 3.0, 3.0, 1, 0.0, 1),
        (3.0, 1.0, 4.0, 2.0, 2, 1.0, 2),
        (5.0, 1.0, 9.0, 3.0, 3, pytest.approx(1.632993161855452), 2),
        (5.0, 1.0, 9.0, 3.0, 4, pytest.approx(1.632993161855452), 2),
    ]
    assert [r for _, r in got["G"]] == [
        ("A", 3.0, 3.0),
        ("B", 1.0, 1.0),
        ("A", 5.0, 3.0),
        ("A", 5.0, 3.0),
    ]


def test_max_follows_siddhi_removal_of_the_first_equal_value():
    """Siddhi 3's max deque: the expiring 5 was pruned by 9, so the newer 5 is removed in its
    place, and after 9 expires max reads 1 though 5 is still in the window."""
    rt = runtime("""@Plan:playback
        define stream S (v double);
        from S#window.length(3) select max(v) as m insert into O;""")
    got = collect(rt, ["O"])
    rt.input_handler("S").send_batch([(i, (v,)) for i, v in enumerate([5.0, 9.0, 5.0, 1.0, 0.0])])
    assert [r[0] for _, r in got["O"]] == [5.0, 9.0, 9.0, 9.0, 1.0]
