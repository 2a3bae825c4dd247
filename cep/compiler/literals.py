"""Literal values: numbers with Java's ranges, quoted strings and names, time units."""

import re
import struct

from cep.errors import SiddhiQLSyntaxError
from cep.model.span import Span

INT_MAX = 2**31 - 1
LONG_MAX = 2**63 - 1

# milliseconds per time unit terminal (Siddhi: a month is 30 days, a year 365 days)
TIME_UNITS = {
    "MILLISECONDS": 1,
    "SECONDS": 1000,
    "MINUTES": 60 * 1000,
    "HOURS": 60 * 60 * 1000,
    "DAYS": 24 * 60 * 60 * 1000,
    "WEEKS": 7 * 24 * 60 * 60 * 1000,
    "MONTHS": 30 * 24 * 60 * 60 * 1000,
    "YEARS": 365 * 24 * 60 * 60 * 1000,
}

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"', "0": "\0"}


def token_span(token):
    """The Span of a lark token."""
    return Span(
        token.line, token.column, token.end_line, token.end_column, token.start_pos, token.end_pos
    )


def float32(value):
    """`value` rounded to a 32-bit float, as Java's float holds it."""
    return struct.unpack("f", struct.pack("f", value))[0]


def parse_int(token, text):
    """An int literal; out of Java int range is an error (use an `L` suffix)."""
    value = int(str(token))
    if value > INT_MAX + 1:  # INT_MAX + 1 is allowed so that -2147483648 can be written
        raise SiddhiQLSyntaxError(
            f"int literal {token} is out of the int range; write {token}L for a long",
            token_span(token),
            text,
        )
    return value


def parse_long(token, text):
    """A long literal such as `100L`."""
    value = int(str(token)[:-1])
    if value > LONG_MAX + 1:
        raise SiddhiQLSyntaxError(
            f"long literal {token} is out of the long range", token_span(token), text
        )
    return value


def parse_float(token):
    """A float literal such as `1.5f`, as a 32-bit float."""
    return float32(float(str(token)[:-1]))


def parse_double(token):
    """A double literal such as `1.5`, `1.5d` or `1e3`."""
    s = str(token)
    return float(s[:-1] if s[-1] in "dD" else s)


def unquote_string(token):
    """The value of a quoted string literal ('...', "...", or triple-quoted), escapes resolved."""
    s = str(token)
    if s[:3] in ("'''", '"""') and len(s) >= 6:
        return s[3:-3]
    body = s[1:-1]
    if "\\" not in body:
        return body
    out, i = [], 0
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            out.append(_ESCAPES.get(body[i + 1], "\\" + body[i + 1]))
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def unquote_name(token):
    """A name without its backquotes (`` `my stream` `` -> `my stream`)."""
    s = str(token)
    return s[1:-1] if s.startswith("`") else s


def time_part_millis(amount_token, unit_token):
    """Milliseconds of one `N unit` part of a time constant."""
    return int(str(amount_token)) * TIME_UNITS[unit_token.type]


_UNIT_WORDS = {
    "millisec": "MILLISECONDS",
    "millisecond": "MILLISECONDS",
    "milliseconds": "MILLISECONDS",
    "ms": "MILLISECONDS",
    "sec": "SECONDS",
    "second": "SECONDS",
    "seconds": "SECONDS",
    "min": "MINUTES",
    "minute": "MINUTES",
    "minutes": "MINUTES",
    "hour": "HOURS",
    "hours": "HOURS",
    "day": "DAYS",
    "days": "DAYS",
    "week": "WEEKS",
    "weeks": "WEEKS",
    "month": "MONTHS",
    "months": "MONTHS",
    "year": "YEARS",
    "years": "YEARS",
}
_TIME_PART = re.compile(r"\s*(\d+)\s*([a-zA-Z]+)\s*")


def parse_time_string(value):
    """Milliseconds of a time written in an annotation value ('1 min 30 sec', '500 ms', or a
    plain number of milliseconds), or None when it is not a time."""
    value = value.strip()
    if value.isdigit():
        return int(value)
    total, pos = 0, 0
    while pos < len(value):
        m = _TIME_PART.match(value, pos)
        unit = _UNIT_WORDS.get(m.group(2).lower()) if m else None
        if unit is None:
            return None
        total += int(m.group(1)) * TIME_UNITS[unit]
        pos = m.end()
    return total if value else None
