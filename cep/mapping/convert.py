"""Values read from text (XML, text, CSV, key-value) as the stream's attribute types, and
values written as text. Whole columns convert in one `map` call; a column with a bad value
falls back to value-by-value conversion so only the events holding it are rejected."""

import json
import math

from cep.model.types import AttrType
from cep.mapping.errors import PayloadError

_TRUE, _FALSE = ("true", "True", "TRUE"), ("false", "False", "FALSE")


def _bool(s):
    if type(s) is bool:
        return s
    t = s.strip() if type(s) is str else s
    if t in _TRUE:
        return True
    if t in _FALSE:
        return False
    raise ValueError(f"{s!r} is not true or false")


def _int(s):
    if type(s) is int:
        return s
    if type(s) is float and s.is_integer():
        return int(s)
    return int(s)


def _float(s):
    if type(s) is float:
        return s
    if type(s) is bool:
        raise ValueError("a bool is not a number")
    return float(s)


def _str(s):
    return s if type(s) is str else _text(s)


def _obj(s):
    return s


FROM_TEXT = {
    AttrType.STRING: _str,
    AttrType.INT: _int,
    AttrType.LONG: _int,
    AttrType.FLOAT: _float,
    AttrType.DOUBLE: _float,
    AttrType.BOOL: _bool,
    AttrType.OBJECT: _obj,
}
# a whole column of strings: the builtins run in C
_FAST_COLUMN = {
    AttrType.INT: int,
    AttrType.LONG: int,
    AttrType.FLOAT: float,
    AttrType.DOUBLE: float,
}


def convert_column(values: list, kind: AttrType, name: str, bad: dict) -> list:
    """`values` (strings, or None for a missing value) as `kind`; a value that does not convert
    becomes None and `bad[row] = reason` (the first reason per row is kept)."""
    if kind is AttrType.STRING or kind is AttrType.OBJECT:
        return values
    fast = _FAST_COLUMN.get(kind)
    if fast is not None:
        try:
            return list(map(fast, values))
        except (TypeError, ValueError):
            pass
    conv = FROM_TEXT[kind]
    out = []
    for i, v in enumerate(values):
        if v is None:
            out.append(None)
            continue
        try:
            out.append(conv(v))
        except (TypeError, ValueError):
            out.append(None)
            bad.setdefault(i, f"attribute {name!r} ({kind}): cannot read {_short(v)}")
    return out


def convert_value(v, kind: AttrType, name: str):
    """One value as `kind`, or PayloadError naming the attribute."""
    if v is None:
        return None
    try:
        return FROM_TEXT[kind](v)
    except (TypeError, ValueError):
        raise PayloadError(f"attribute {name!r} ({kind}): cannot read {_short(v)}") from None


def _text(v) -> str:
    """A value as Siddhi writes it in text: true/false, null, 55.6, 100."""
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if type(v) is float:
        return (
            repr(v)
            if math.isfinite(v)
            else ("NaN" if v != v else ("Infinity" if v > 0 else "-Infinity"))
        )
    if isinstance(v, (dict, list, tuple)):
        return json.dumps(v, ensure_ascii=False, default=str)
    return str(v)


to_text = _text


def _short(v, limit=60):
    text = repr(v)
    return text if len(text) <= limit else text[:limit] + "..."


short = _short
