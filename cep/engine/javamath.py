"""Java arithmetic and conversions the generated code calls: 32-bit floats, truncating integer
division, remainders with the dividend's sign, null on division by zero, Java number strings."""

import math
import re
import struct
from decimal import Decimal

_F = struct.Struct("f")
INT_MIN, INT_MAX = -(1 << 31), (1 << 31) - 1
LONG_MIN, LONG_MAX = -(1 << 63), (1 << 63) - 1


def f32(x):
    """Round a number to the nearest 32-bit float (None stays None)."""
    if x is None:
        return None
    try:
        return _F.unpack(_F.pack(x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)


def int_to_f32(x):
    """Java's (float) of an int or long: one correctly rounded step (half to even), not two
    through a double (None stays None)."""
    if x is None or -16777216 <= x <= 16777216:
        return None if x is None else float(x)
    a = -x if x < 0 else x
    shift = a.bit_length() - 24
    m, rem, half = a >> shift, a & ((1 << shift) - 1), 1 << (shift - 1)
    if rem > half or (rem == half and m & 1):
        m += 1
    return float(-(m << shift) if x < 0 else m << shift)


def d2i(x, lo, hi):
    """Java's narrowing (int)/(long) of a double: truncates, saturates at lo/hi, NaN is 0."""
    if x != x:
        return 0
    if x >= hi:
        return hi
    if x <= lo:
        return lo
    return int(x)


def wrap32(x):
    return ((x + 2147483648) & 4294967295) - 2147483648


def wrap64(x):
    return ((x + 9223372036854775808) & 18446744073709551615) - 9223372036854775808


def idiv(a, b):
    """Java integer division: truncates toward zero; null when dividing by zero."""
    if a is None or b is None or b == 0:
        return None
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def idiv32(a, b):
    """int division: MIN_VALUE / -1 overflows back to MIN_VALUE, as in Java."""
    q = idiv(a, b)
    return INT_MIN if q == 2147483648 else q


def idiv64(a, b):
    """long division: MIN_VALUE / -1 overflows back to MIN_VALUE, as in Java."""
    q = idiv(a, b)
    return LONG_MIN if q == 9223372036854775808 else q


def imod(a, b):
    """Java integer remainder: takes the sign of the dividend; null on zero."""
    if a is None or b is None or b == 0:
        return None
    r = abs(a) % abs(b)
    return -r if a < 0 else r


def ddiv(a, b):
    if a is None or b is None or b == 0:
        return None
    return a / b


def dmod(a, b):
    """Java's double %: null on a zero divisor (Siddhi); an infinite dividend gives NaN."""
    if a is None or b is None or b == 0:
        return None
    try:
        return math.fmod(a, b)
    except ValueError:  # fmod(inf, b): Java gives NaN
        return math.nan


# FloatingDecimal.insignificantDigitsNumber (Java 8-17): low-order digits an integral value
# drops, by how far its binary exponent passes the significand
_INSIGNIFICANT = (
    0,
    0,
    0,
    0,
    1,
    1,
    1,
    2,
    2,
    2,
    3,
    3,
    3,
    3,
    4,
    4,
    4,
    5,
    5,
    5,
    6,
    6,
    6,
    6,
    7,
    7,
    7,
    8,
    8,
    8,
    9,
    9,
    9,
    9,
    10,
    10,
    10,
    11,
    11,
    11,
    12,
    12,
    12,
    12,
    13,
    13,
    13,
    14,
    14,
    14,
    15,
    15,
    15,
    15,
    16,
    16,
    16,
    17,
    17,
    17,
    18,
    18,
    18,
    19,
)


def _java_integral_str(x, significant_bits):
    """Double/Float.toString of an integral value in [1, 2^63): Java (up to 17) prints the
    integer's own digits (4.5345104059499528E16, 4.41035264E8), not the shortest ones; None
    for other values."""
    a = abs(x)
    if not (1.0 <= a < 9.223372036854776e18) or a != int(a):
        return None
    n = int(a)
    bin_exp = n.bit_length() - 1
    p2 = bin_exp - significant_bits - 1
    drop = _INSIGNIFICANT[p2] if 1 < p2 < len(_INSIGNIFICANT) else 0
    if drop:
        n, residue = divmod(n, 10**drop)
        n += residue >= 10**drop // 2
    text = str(n)
    dec_exp, digits = len(text) + drop, text.rstrip("0")
    sign = "-" if x < 0 else ""
    if dec_exp < 8:
        return f"{sign}{digits}{'0' * (dec_exp - len(digits))}.{digits[dec_exp:] or '0'}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{dec_exp - 1}"


def java_double_str(x):
    """Double.toString: '3.75', '1.0', '1.0E10', '1.0E-4'."""
    if x != x:
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    integral = _java_integral_str(x, 53)
    if integral is not None:
        return integral
    a = abs(x)
    if a == 0 or 1e-3 <= a < 1e7:
        s = repr(float(x))
        return s if ("." in s or "e" in s) else s + ".0"
    _, digits, exp = Decimal(repr(a)).as_tuple()
    ds = "".join(map(str, digits)).rstrip("0") or "0"
    e10 = len(digits) + exp - 1
    return f"{'-' if x < 0 else ''}{ds[0]}.{ds[1:] or '0'}E{e10}"


def java_float_str(x):
    """Float.toString of a 32-bit float: the fewest digits that read back as the same float
    ('0.1' for the float nearest 0.1, where Double.toString gives '0.10000000149011612')."""
    if x is None or x != x or math.isinf(x) or x == 0:
        return java_str(x)
    integral = _java_integral_str(x, 24)
    if integral is not None:
        return integral
    for digits in range(1, 10):
        shortest = float(f"{x:.{digits}g}")
        if f32(shortest) == x:
            return java_double_str(shortest)
    return java_double_str(x)


def java_str(x):
    """String.valueOf for the values our rows hold."""
    if x is None:
        return None
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, float):
        return java_double_str(x)
    return str(x)


# -- parsing strings as Java does (Integer.parseInt, Double.parseDouble, Boolean.parseBoolean) --
_JAVA_DECIMAL = re.compile(r"[+-]?(NaN|Infinity|(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?)[fFdD]?")


def parse_int(s, lo, hi):
    """Integer.parseInt / Long.parseLong: an optional sign and digits only (no spaces, no
    fraction), in range; None where Java throws NumberFormatException."""
    digits = s[1:] if s[:1] in ("+", "-") else s
    if not digits or not digits.isdecimal():
        return None
    v = int(s)
    return v if lo <= v <= hi else None


def parse_double(s):
    """Double.parseDouble: surrounding control characters and spaces are ignored, a decimal
    (exponent, f/d suffix allowed), NaN or Infinity; None where Java throws."""
    t = s.strip("".join(map(chr, range(33))))
    if not _JAVA_DECIMAL.fullmatch(t):
        return None
    t = t.rstrip("fFdD") if t[-1:] in "fFdD" and not t.endswith("Infinity") else t
    return float(t.replace("Infinity", "inf"))


def parse_bool(s):
    """Boolean.parseBoolean: true only for 'true' in any case (no trimming)."""
    return s.lower() == "true"
