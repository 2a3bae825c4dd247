"""Differential test of expression arithmetic against real Java (javac + java, the JDK that
Spark needs): random expressions over int, long, float and double attributes and literals,
with extreme values, evaluated by our generated code and by Java's own operators.

Siddhi 3.2 evaluates arithmetic and comparisons with Java's operators, except that a division
or modulo by zero gives null (Java: ArithmeticException for integers, Infinity/NaN for
floating point); rows where our answer or an operand of a comparison is null are not
compared."""

import random
import struct
import subprocess

import pytest

from cep.engine.expressions import SingleStreamScope, compile_expression, make_function
from cep.model import (
    Attribute,
    AttrType as T,
    BinaryOp,
    CompareOp,
    Constant,
    Negate,
    StreamDefinition,
    Variable,
)
from tests.conftest import require_binary

DEF = StreamDefinition(
    "S",
    (
        Attribute("i", T.INT),
        Attribute("l", T.LONG),
        Attribute("f", T.FLOAT),
        Attribute("d", T.DOUBLE),
    ),
)
SCOPE = SingleStreamScope(DEF)
CONSTANTS = {
    T.INT: [3, -7, 2147483647, 100000],
    T.LONG: [5, -9223372036854775807, 123456789012345],
    T.FLOAT: [1.5, 0.1, 3e38, -2.75],
    T.DOUBLE: [0.1, 1e308, -3.5, 1e-300],
}


def f32(x):
    return struct.unpack("f", struct.pack("f", x))[0]


class Generator:
    def __init__(self, seed):
        self.rnd = random.Random(seed)

    def numeric(self, depth):
        rnd = self.rnd
        if depth == 0 or rnd.random() < 0.3:
            if rnd.random() < 0.7:
                return Variable(rnd.choice("ilfd"))
            t = rnd.choice(list(CONSTANTS))
            v = rnd.choice(CONSTANTS[t])
            return Constant(f32(v) if t == T.FLOAT else v, t)
        if rnd.random() < 0.1:
            return Negate(self.numeric(depth - 1))
        return BinaryOp(rnd.choice("+-*/%"), self.numeric(depth - 1), self.numeric(depth - 1))

    def expression(self):
        if self.rnd.random() < 0.5:
            return self.numeric(3)
        return CompareOp(
            self.rnd.choice(["==", "!=", "<", "<=", ">", ">="]), self.numeric(2), self.numeric(2)
        )

    def row(self):
        rnd = self.rnd
        return (
            rnd.choice(
                [0, 1, -1, 7, -(2**31), 2**31 - 1, 16777217, rnd.randint(-(2**31), 2**31 - 1)]
            ),
            rnd.choice(
                [0, -1, 3, -(2**63), 2**63 - 1, 2**53 + 1, rnd.randint(-(2**63), 2**63 - 1)]
            ),
            f32(rnd.choice([0.0, 1.5, -0.1, 3.4e38, 16777217.0, rnd.uniform(-1e6, 1e6)])),
            rnd.choice([0.0, 2.5, -1e308, 1e-3, 2.0**53, rnd.uniform(-1e12, 1e12)]),
        )


def java_source(e):
    if isinstance(e, Variable):
        return e.name
    if isinstance(e, Constant):
        if e.type in (T.INT, T.LONG):
            return f"({e.value}{'L' if e.type == T.LONG else ''})"
        cast = "(float) " if e.type == T.FLOAT else ""
        return f"({cast}{float.hex(e.value)})"
    if isinstance(e, Negate):
        return f"(-{java_source(e.operand)})"
    return f"({java_source(e.left)} {e.op} {java_source(e.right)})"


def evaluator(e):
    c = compile_expression(e, SCOPE)
    return c.type, make_function("v", f"def v(r):\n    ts = 0\n    return {c.source}\n", c.globals)


def ours(e, rows):
    """Our answers; None where the row is not compared."""
    t, fn = evaluator(e)
    sides = [evaluator(x)[1] for x in (e.left, e.right)] if isinstance(e, CompareOp) else []
    return t, [None if any(s(r) is None for s in sides) else fn(r) for r in rows]


def run_java(exprs, rows, folder):
    methods = [
        f"  static void e{n}(int i, long l, float f, double d) {{ try {{ Object v = "
        f"{java_source(e)}; System.out.println(v instanceof Float ? Double.toString((Float) v)"
        f' : v.toString()); }} catch (ArithmeticException x) {{ System.out.println("null"); }} }}'
        for n, e in enumerate(exprs)
    ]
    calls = [
        f"    for (int k = 0; k < I.length; k++) e{n}(I[k], L[k], F[k], D[k]);"
        for n in range(len(exprs))
    ]
    src = "\n".join(
        [
            "public class Arith {",
            f"  static int[] I = {{{', '.join(str(r[0]) for r in rows)}}};",
            f"  static long[] L = {{{', '.join(f'{r[1]}L' for r in rows)}}};",
            f"  static float[] F = {{{', '.join(f'(float) {float.hex(r[2])}' for r in rows)}}};",
            f"  static double[] D = {{{', '.join(float.hex(r[3]) for r in rows)}}};",
            *methods,
            "  public static void main(String[] a) {",
            *calls,
            "  }",
            "}",
            "",
        ]
    )
    (folder / "Arith.java").write_text(src)
    subprocess.run(
        [
            require_binary("javac", "the Java differential test compiles Java"),
            "-d",
            str(folder),
            str(folder / "Arith.java"),
        ],
        check=True,
        timeout=300,
    )
    out = subprocess.run(
        [
            require_binary("java", "the Java differential test runs Java"),
            "-cp",
            str(folder),
            "Arith",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    ).stdout.split("\n")
    return [out[n * len(rows) : (n + 1) * len(rows)] for n in range(len(exprs))]


def same(t, java, ours_value):
    if t == T.BOOL:
        return (java == "true") == ours_value
    if t in (T.INT, T.LONG):
        return int(java) == ours_value
    j = float(java.replace("Infinity", "inf"))
    return (j != j and ours_value != ours_value) or j == ours_value


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2])
def test_arithmetic_and_comparisons_match_java(seed, tmp_path):
    gen = Generator(seed)
    direct = [
        CompareOp(op, Variable(a), Variable(b))
        for op in ("==", "!=", "<", ">=")
        for a, b in (("l", "d"), ("i", "f"), ("l", "f"))
    ]
    exprs = direct + [gen.expression() for _ in range(300)]
    # integers just past float/double precision next to the float/double they round to
    rows = [(16777217, 2**53 + 1, 16777216.0, 2.0**53)] + [gen.row() for _ in range(7)]
    java = run_java(exprs, rows, tmp_path)
    diffs, compared = [], 0
    for e, java_values in zip(exprs, java):
        t, values = ours(e, rows)
        for row, j, v in zip(rows, java_values, values):
            if j == "null" or v is None:
                continue  # Siddhi's null on division by zero
            compared += 1
            if not same(t, j, v):
                diffs.append(f"{java_source(e)} at {row}: Java {j}, ours {v!r}")
    assert compared > 1000
    assert diffs[:5] == [], f"{len(diffs)} differences"


TO_STRING = """import java.io.*;
public class Str { public static void main(String[] a) throws Exception {
  BufferedReader r = new BufferedReader(new InputStreamReader(System.in)); String line;
  StringBuilder sb = new StringBuilder();
  while ((line = r.readLine()) != null) {
    double d = Double.longBitsToDouble(Long.parseLong(line));
    sb.append(Double.toString(d)).append(' ').append(Float.toString((float) d)).append('\\n'); }
  System.out.print(sb); } }
"""


@pytest.mark.slow
def test_double_and_float_to_string_match_java(tmp_path):
    from cep.engine.javamath import java_double_str, java_float_str

    rnd = random.Random(5)
    values = [rnd.uniform(-1e9, 1e9) for _ in range(5000)]
    values += [float(rnd.randint(-(2**62), 2**62) >> rnd.randint(0, 60)) for _ in range(5000)]
    values += [round(rnd.uniform(-1000, 1000), rnd.randint(0, 6)) for _ in range(5000)]
    values += [struct.unpack("d", struct.pack("Q", rnd.getrandbits(64)))[0] for _ in range(5000)]
    values = [v for v in values if v == v and (v == 0 or abs(v) > 1e-43)]  # see README
    (tmp_path / "Str.java").write_text(TO_STRING)
    subprocess.run(
        [
            require_binary("javac", "compiles the Java side"),
            "-d",
            str(tmp_path),
            str(tmp_path / "Str.java"),
        ],
        check=True,
        timeout=300,
    )
    lines = "".join(f"{struct.unpack('q', struct.pack('d', v))[0]}\n" for v in values)
    out = subprocess.run(
        [require_binary("java", "runs the Java side"), "-cp", str(tmp_path), "Str"],
        input=lines,
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    ).stdout.splitlines()
    diffs = [
        (v, j)
        for v, j in zip(values, out)
        if j != f"{java_double_str(v)} {java_float_str(f32(v))}" and abs(v) < 2**63
    ]
    assert len(out) == len(values) and diffs[:5] == []
