"""`math:` — Siddhi 3.2.15's math extension: 42 functions here (the 43rd, `percentile`, is an
aggregator, see `cep.catalog.ext.aggregators`). Java's Math semantics: NaN and infinities
instead of Python's exceptions, Java's rounding, Java's hex/octal/binary strings, and
java.util.Random's sequence for a seeded `rand`."""

import math

from cep.catalog.ext import register
from cep.catalog.ext.support import (
    BOOL,
    DOUBLE,
    FLOAT,
    INT,
    LONG,
    NUMBERS,
    STRING,
    entry,
    require_constant,
    signature,
)
from cep.engine import javamath

NS = "math"
FD = (FLOAT, DOUBLE)
IL = (INT, LONG)
INF, NAN = math.inf, math.nan


def _need(*xs):
    for x in xs:
        if x is None:
            raise ValueError("input to the math function cannot be null")


def _java(fn, domain=None):
    """A double -> double Math function with Java's NaN/infinity results where Python's
    math raises (log(0) is -Infinity, sqrt(-1) and acos(2) are NaN, exp(1000) Infinity)."""

    def call(x):
        _need(x)
        x = float(x)
        try:
            return fn(x)
        except (ValueError, OverflowError):
            return domain(x) if domain else NAN

    call.__name__ = fn.__name__
    return call


def _log_domain(x):
    if x != x or x < 0:
        return NAN
    return -INF if x == 0 else INF


def _exp_domain(x):
    return INF if x > 0 else 0.0


def _hyper_domain(sign_of_x):
    return lambda x: INF if not sign_of_x or x > 0 else -INF


def _ceil(x):
    """Math.ceil: a double, and -0.0 for -1 < x <= -0.0."""
    r = float(math.ceil(x))
    return math.copysign(r, x) if r == 0 else r


def _floor(x):
    """Math.floor: a double (floor(-0.0) is -0.0)."""
    r = float(math.floor(x))
    return math.copysign(r, x) if r == 0 else r


def _log2(x):
    return _ln(x) / math.log(2.0)


_ln = _java(math.log, _log_domain)


def _log(n, base):
    _need(n, base)
    n, base = float(n), float(base)
    lb = _ln(base)
    if lb == 0:
        raise ValueError("logarithm to the base 1 is undefined")
    return _div(_ln(n), lb)


def _div(a, b):
    if b == 0:
        if a != a or a == 0:
            return NAN
        return math.copysign(INF, a) * math.copysign(1.0, b)
    return a / b


def _pow(a, b):
    _need(a, b)
    a, b = float(a), float(b)
    try:
        r = math.pow(a, b)
    except OverflowError:
        r = INF if a > 0 or float(b).is_integer() and b % 2 == 0 else -INF
    except ValueError:  # 0 to a negative power: infinity; a negative base to a fraction: NaN
        if a == 0:
            odd = b.is_integer() and b % 2 == 1
            return -INF if odd and math.copysign(1.0, a) < 0 else INF
        return NAN
    return r


def _atan(y):
    _need(y)
    return math.atan(float(y))


def _atan2(y, x):
    _need(y, x)
    return math.atan2(float(y), float(x))


def _max(a, b):
    _need(a, b)
    a, b = float(a), float(b)
    if a != a or b != b:
        return NAN
    if a == b == 0:
        return 0.0 if math.copysign(1, a) > 0 or math.copysign(1, b) > 0 else -0.0
    return a if a >= b else b


def _min(a, b):
    _need(a, b)
    a, b = float(a), float(b)
    if a != a or b != b:
        return NAN
    if a == b == 0:
        return -0.0 if math.copysign(1, a) < 0 or math.copysign(1, b) < 0 else 0.0
    return a if a <= b else b


def _copy_sign(a, b):
    _need(a, b)
    return math.copysign(float(a), float(b))


def _signum(x):
    """(int) Math.signum(x): NaN gives 0."""
    _need(x)
    x = float(x)
    return 0 if x != x or x == 0 else (1 if x > 0 else -1)


def _get_exponent(x):
    """Math.getExponent(double): the unbiased binary exponent (1024 for NaN and infinities,
    -1023 for zero and subnormals)."""
    _need(x)
    x = float(x)
    if x != x or math.isinf(x):
        return 1024
    if x == 0:
        return -1023
    m, e = math.frexp(x)
    return max(e - 1, -1023)


def _get_exponent_float(x):
    """Math.getExponent(float): 128 for NaN and infinities, -127 for zero and subnormals."""
    _need(x)
    if x != x or math.isinf(x):
        return 128
    if x == 0:
        return -127
    return max(math.frexp(x)[1] - 1, -127)


def _java_round(x, lo, hi):
    """Math.round: floor(x + 1/2) computed exactly (as Java 7+ does), NaN 0, saturating.
    x - floor(x) is exact wherever it decides the answer."""
    if x != x:
        return 0
    if math.isinf(x):
        return hi if x > 0 else lo
    if abs(x) >= 2.0**52:
        r = int(x)
    else:
        r = math.floor(x)
        r += x - r >= 0.5
    return max(lo, min(hi, r))


def _round_float(x):
    """Math.round(float) -> int."""
    _need(x)
    return _java_round(float(x), javamath.INT_MIN, javamath.INT_MAX)


def _round_double(x):
    """Math.round(double) -> long."""
    _need(x)
    return _java_round(x, javamath.LONG_MIN, javamath.LONG_MAX)


def _unsigned(x, bits):
    return x & ((1 << bits) - 1)


def _to_string_int(fmt):
    def call(x, *_):
        _need(x)
        return format(_unsigned(x, 32), fmt)

    return call


def _to_string_long(fmt):
    def call(x):
        _need(x)
        return format(_unsigned(x, 64), fmt)

    return call


def _java_hex_double(x, mant_bits=52, min_exp=-1022):
    """Double.toHexString (and Float's, with 23 bits and -126)."""
    _need(x)
    if x != x:
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    sign = "-" if math.copysign(1.0, x) < 0 else ""
    if x == 0:
        return f"{sign}0x0.0p0"
    m, e = math.frexp(abs(x))  # abs(x) = m * 2**e, 0.5 <= m < 1
    exp = e - 1
    if exp < min_exp:  # subnormal: 0x0.<digits>p<min_exp>
        frac = int(abs(x) / 2.0 ** (min_exp - mant_bits))
        digits = format(frac << (52 - mant_bits), "013x").rstrip("0") or "0"
        if mant_bits != 52:
            digits = format(frac << 1, "06x").rstrip("0") or "0"
        return f"{sign}0x0.{digits}p{min_exp}"
    frac = int((m * 2 - 1) * (1 << mant_bits))
    width = 13 if mant_bits == 52 else 6
    shift = 0 if mant_bits == 52 else 1
    digits = format(frac << shift, f"0{width}x").rstrip("0") or "0"
    return f"{sign}0x1.{digits}p{exp}"


def _hex_factory(types, args):
    t = types[0]
    if t is INT:
        return _to_string_int("x")
    if t is LONG:
        return _to_string_long("x")
    if t is FLOAT:
        return lambda x: _java_hex_double(x, 23, -126)
    return _java_hex_double


def _int_long_factory(fmt):
    def factory(types, args):
        return _to_string_int(fmt) if types[0] is INT else _to_string_long(fmt)

    return factory


_DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz"


def _parse_int_radix(s, radix):
    """Integer.parseInt(s, radix)."""
    if not 2 <= radix <= 36 or not s:
        raise ValueError(f"cannot parse {s!r} in radix {radix}")
    body = s[1:] if s[0] in "+-" else s
    if not body or any(c.lower() not in _DIGITS[:radix] for c in body):
        raise ValueError(f"cannot parse {s!r} in radix {radix}")
    v = int(s, radix)
    if not javamath.INT_MIN <= v <= javamath.INT_MAX:
        raise ValueError(f"{s!r} is out of the int range")
    return v


def _int_to_string_radix(v, radix):
    """Integer.toString(v, radix): radix outside 2..36 means 10."""
    if not 2 <= radix <= 36:
        radix = 10
    if v == 0:
        return "0"
    neg, v, out = v < 0, abs(v), []
    while v:
        v, d = divmod(v, radix)
        out.append(_DIGITS[d])
    return ("-" if neg else "") + "".join(reversed(out))


def _conv(s, from_base, to_base):
    _need(s, from_base, to_base)
    return _int_to_string_radix(_parse_int_radix(s, from_base), to_base)


def _parse_int(s):
    _need(s)
    v = javamath.parse_int(s, javamath.INT_MIN, javamath.INT_MAX)
    if v is None:
        raise ValueError(f"For input string: {s!r}")
    return v


def _parse_long(s):
    _need(s)
    v = javamath.parse_int(s, javamath.LONG_MIN, javamath.LONG_MAX)
    if v is None:
        raise ValueError(f"For input string: {s!r}")
    return v


def _parse_double(s):
    _need(s)
    v = javamath.parse_double(s)
    if v is None:
        raise ValueError(f"For input string: {s!r}")
    return v


def _parse_float(s):
    return javamath.f32(_parse_double(s))


class JavaRandom:
    """java.util.Random: the 48-bit linear congruential generator and nextDouble()."""

    def __init__(self, seed: int):
        self.seed = (seed ^ 0x5DEECE66D) & ((1 << 48) - 1)

    def _next(self, bits: int) -> int:
        self.seed = (self.seed * 0x5DEECE66D + 0xB) & ((1 << 48) - 1)
        return self.seed >> (48 - bits)

    def next_double(self) -> float:
        return ((self._next(26) << 27) + self._next(27)) * (1.0 / (1 << 53))


def _rand_rule(types, call):
    signature("math:rand", DOUBLE, IL)(types, call)
    require_constant("math:rand", call, 0, "seed")
    return DOUBLE


def _rand_factory(types, args):
    import random

    if args:
        generator = JavaRandom(int(args[0].value))
        return lambda seed=None: generator.next_double()
    generator = random.Random()
    return lambda: generator.random()


def _numeric(name, fn, accept=NUMBERS, result=DOUBLE, doc=""):
    return entry(NS, name, 1, 1, signature(f"math:{name}", result, accept), fn, doc)


def _pair(name, fn, doc):
    return entry(NS, name, 2, 2, signature(f"math:{name}", DOUBLE, NUMBERS, NUMBERS), fn, doc)


def _round_rule(types, call):
    signature("math:round", None, FD)(types, call)
    return INT if types[0] is FLOAT else LONG


def _is_nan(x):
    _need(x)
    return x != x


def _is_infinite(x):
    _need(x)
    return math.isinf(x)


_sqrt = _java(math.sqrt)
register(
    NS,
    [
        _numeric("abs", _java(abs), doc="abs(number) -> double"),
        _numeric(
            "acos", _java(math.acos), FD, doc="acos(float|double) -> double, NaN outside [-1, 1]"
        ),
        _numeric("asin", _java(math.asin), FD, doc="asin(float|double) -> double"),
        entry(
            NS,
            "atan",
            1,
            2,
            signature("math:atan", DOUBLE, NUMBERS, NUMBERS),
            lambda types, args: _atan if len(types) == 1 else _atan2,
            "atan(number) or atan(y, x) (atan2) -> double",
            factory=True,
        ),
        entry(
            NS,
            "bin",
            1,
            1,
            signature("math:bin", STRING, IL),
            _int_long_factory("b"),
            "bin(int|long): Integer/Long.toBinaryString",
            factory=True,
        ),
        _numeric("ceil", _java(_ceil, lambda x: x), FD, doc="ceil(float|double) -> double"),
        entry(
            NS,
            "conv",
            3,
            3,
            signature("math:conv", STRING, (STRING,), (INT,), (INT,)),
            _conv,
            "conv(string, fromBase, toBase): Integer.toString(Integer.parseInt(s, from), to)",
        ),
        _pair("copySign", _copy_sign, "copySign(magnitude, sign) -> double"),
        _numeric("cos", _java(math.cos), doc="cos(number) -> double"),
        _numeric("cosh", _java(math.cosh, lambda x: INF), doc="cosh(number) -> double"),
        _numeric(
            "cbrt",
            _java(lambda x: math.copysign(abs(x) ** (1.0 / 3.0), x) if not math.isinf(x) else x),
            doc="cbrt(number) -> double",
        ),
        entry(NS, "e", 0, 0, signature("math:e", DOUBLE), lambda: math.e, "e() -> 2.718..."),
        _numeric("exp", _java(math.exp, _exp_domain), doc="exp(number) -> double"),
        _numeric("floor", _java(_floor, lambda x: x), doc="floor(number) -> double"),
        entry(
            NS,
            "getExponent",
            1,
            1,
            signature("math:getExponent", INT, NUMBERS),
            lambda types, args: _get_exponent_float if types[0] is FLOAT else _get_exponent,
            "getExponent(number) -> int: Math.getExponent",
            factory=True,
        ),
        entry(
            NS,
            "hex",
            1,
            1,
            signature("math:hex", STRING, NUMBERS),
            _hex_factory,
            "hex(number): Integer/Long/Float/Double.toHexString",
            factory=True,
        ),
        entry(
            NS,
            "isInfinite",
            1,
            1,
            signature("math:isInfinite", BOOL, FD),
            _is_infinite,
            "isInfinite(float|double) -> bool",
            boolean=True,
        ),
        entry(
            NS,
            "isNan",
            1,
            1,
            signature("math:isNan", BOOL, FD),
            _is_nan,
            "isNan(float|double) -> bool",
            boolean=True,
        ),
        _numeric("ln", _ln, doc="ln(number) -> double"),
        _pair("log", _log, "log(number, base) -> double (base 1 fails)"),
        _numeric("log10", _java(math.log10, _log_domain), doc="log10(number) -> double"),
        _numeric("log2", _java(_log2, _log_domain), doc="log2(number) -> double"),
        _pair("max", _max, "max(a, b) -> double"),
        _pair("min", _min, "min(a, b) -> double"),
        entry(
            NS,
            "oct",
            1,
            1,
            signature("math:oct", STRING, IL),
            _int_long_factory("o"),
            "oct(int|long): Integer/Long.toOctalString",
            factory=True,
        ),
        entry(
            NS,
            "parseDouble",
            1,
            1,
            signature("math:parseDouble", DOUBLE, (STRING,)),
            _parse_double,
            "parseDouble(string) -> double",
        ),
        entry(
            NS,
            "parseFloat",
            1,
            1,
            signature("math:parseFloat", FLOAT, (STRING,)),
            _parse_float,
            "parseFloat(string) -> float",
        ),
        entry(
            NS,
            "parseInt",
            1,
            1,
            signature("math:parseInt", INT, (STRING,)),
            _parse_int,
            "parseInt(string) -> int",
        ),
        entry(
            NS,
            "parseLong",
            1,
            1,
            signature("math:parseLong", LONG, (STRING,)),
            _parse_long,
            "parseLong(string) -> long",
        ),
        entry(NS, "pi", 0, 0, signature("math:pi", DOUBLE), lambda: math.pi, "pi() -> 3.14..."),
        _pair("power", _pow, "power(base, exponent) -> double"),
        entry(
            NS,
            "rand",
            0,
            1,
            _rand_rule,
            _rand_factory,
            "rand([seed]) -> double in [0, 1): java.util.Random's sequence for a seed",
            pure=False,
            factory=True,
        ),
        entry(
            NS,
            "round",
            1,
            1,
            _round_rule,
            lambda types, args: _round_float if types[0] is FLOAT else _round_double,
            "round(float) -> int, round(double) -> long",
            factory=True,
        ),
        _numeric("signum", _signum, result=INT, doc="signum(number) -> int"),
        _numeric("sin", _java(math.sin), doc="sin(number) -> double"),
        _numeric(
            "sinh", _java(math.sinh, lambda x: INF if x > 0 else -INF), doc="sinh(number) -> double"
        ),
        _numeric("sqrt", _sqrt, doc="sqrt(number) -> double, NaN for a negative"),
        _numeric("tan", _java(math.tan), doc="tan(number) -> double"),
        _numeric("tanh", _java(math.tanh), doc="tanh(number) -> double"),
        _numeric("toDegrees", _java(math.degrees), doc="toDegrees(number) -> double"),
        _numeric("toRadians", _java(math.radians), doc="toRadians(number) -> double"),
    ],
)
