"""Built-in scalar functions of Siddhi 3 core: one entry per function with its arity, its type
rule and its implementation.

`rule(types, call)` gives the result type (or raises a positioned TypeMismatchError);
`emit(sources, types, args)` gives the Python source of a call over the argument sources, and
the globals that source needs. The compiler types plans with the rules; the engine generates
code with both."""

import time
import uuid
from dataclasses import dataclass
from typing import Callable, Optional

from cep.catalog.rules import BOOL, LONG, OBJECT, STRING, fail, numeric, returns, same_type
from cep.engine import javamath
from cep.model import AttrType, Constant, TYPES


@dataclass(frozen=True)
class FunctionEntry:
    name: str
    min_args: int
    max_args: Optional[int]
    rule: Callable  # (arg types, call) -> AttrType
    emit: Callable  # (arg sources, arg types, arg exprs) -> (source, globals)
    doc: str = ""
    pure: bool = True  # same arguments, same result: a call over literals is folded


# -- type rules --
def _target_type(name):
    def rule(types, call):
        target = call.args[1]
        if not (isinstance(target, Constant) and target.type is STRING):
            fail(call, f"{name}() needs the target type as a string constant such as 'int'", 1)
        attr_type = TYPES.get(target.value.lower())
        if attr_type is None:
            fail(
                call,
                f"{name}() to unknown type '{target.value}' (expected one of {', '.join(TYPES)})",
                1,
            )
        return attr_type

    return rule


def _if_then_else(types, call):
    if types[0] not in (BOOL, OBJECT):
        fail(call, f"ifThenElse() condition must be bool, not {types[0]}", 0)
    if types[1] != types[2]:
        fail(
            call,
            f"ifThenElse() branches must have one type: then is {types[1]}, else is {types[2]}",
            2,
        )
    return types[1]


def _extremum(name):
    def rule(types, call):
        numeric(name, call, types)
        return same_type(name, call, types)

    return rule


def _default(types, call):
    if types[1] != types[0] and types[1] is not OBJECT:
        fail(call, f"default() value must be {types[0]} like the attribute, not {types[1]}", 1)
    return types[0]


# -- implementations --
def _to_bool(x):
    """Siddhi 3.2: a string by Boolean.parseBoolean, a number is true when it equals 1."""
    if x is None or isinstance(x, bool):
        return x
    if isinstance(x, str):
        return javamath.parse_bool(x)
    return x == 1


def _to_int(x, lo, hi):
    """A string by Integer/Long.parseInt (null when Java throws), a double by Java's
    narrowing cast (truncates, saturates, NaN is 0), a long to int wraps, a bool is 1/0."""
    if x is None:
        return None
    if isinstance(x, str):
        return javamath.parse_int(x, lo, hi)
    if isinstance(x, float):
        return javamath.d2i(x, lo, hi)
    return javamath.wrap32(int(x)) if hi == javamath.INT_MAX else javamath.wrap64(int(x))


def _to_float(x):
    """A string by Double.parseDouble (null when Java throws); numbers and bools widen."""
    if x is None:
        return None
    if isinstance(x, str):
        return javamath.parse_double(x)
    return float(x)


def _to_f32(x):
    """Java's floatValue(): an int or long is rounded to 32 bits once, not via a double."""
    if isinstance(x, int) and not isinstance(x, bool):
        return javamath.int_to_f32(x)
    return javamath.f32(_to_float(x))


CONVERTERS = {
    AttrType.STRING: javamath.java_str,
    AttrType.INT: lambda x: _to_int(x, javamath.INT_MIN, javamath.INT_MAX),
    AttrType.LONG: lambda x: _to_int(x, javamath.LONG_MIN, javamath.LONG_MAX),
    AttrType.DOUBLE: _to_float,
    AttrType.FLOAT: _to_f32,
    AttrType.BOOL: _to_bool,
    AttrType.OBJECT: lambda x: x,
}


def _coalesce(*xs):
    for x in xs:
        if x is not None:
            return x
    return None


def _maximum(*xs):
    """`@Plan:siddhi('fixed')`'s maximum: the largest non-null argument (null if none)."""
    xs = [x for x in xs if x is not None]
    return max(xs) if xs else None


def _minimum(*xs):
    """`@Plan:siddhi('fixed')`'s minimum: the smallest non-null argument (null if none)."""
    xs = [x for x in xs if x is not None]
    return min(xs) if xs else None


_DOUBLE_MIN_VALUE, _DOUBLE_MAX_VALUE = 5e-324, 1.7976931348623157e308
_NARROW = {  # Java's narrowing of the double result to the declared return type
    AttrType.INT: lambda m: javamath.d2i(m, javamath.INT_MIN, javamath.INT_MAX),
    AttrType.LONG: lambda m: javamath.d2i(m, javamath.LONG_MIN, javamath.LONG_MAX),
    AttrType.FLOAT: javamath.f32,
    AttrType.DOUBLE: lambda m: m,
}


def _siddhi32_extremum(largest, narrow):
    """Siddhi 3.2's Maximum/MinimumFunctionExecutor: every argument is widened to a double,
    the running value starts at Double.MIN_VALUE (the smallest positive double, for maximum)
    or Double.MAX_VALUE (minimum), a null argument counts as that start value, and the result
    is narrowed back to the return type. So maximum of negatives is 0 (4.9e-324 as a double),
    null is never returned, and longs beyond 2^53 come back rounded."""
    start = _DOUBLE_MIN_VALUE if largest else _DOUBLE_MAX_VALUE

    def extremum(*xs):
        m = start
        for x in xs:
            v = start if x is None else float(x)
            if (v > m) if largest else (v < m):
                m = v
        return narrow(m)

    return extremum


def _emit_extremum(name):
    """`_maximum_int(...)` and the like: Siddhi 3.2's executor by default; the plan's
    `@Plan:siddhi('fixed')` rebinds these names to `_maximum`/`_minimum` (BuildContext.env)."""

    def emit(srcs, types, args):
        rtype = types[0] if types[0] in _NARROW else AttrType.DOUBLE
        helper = f"_{name}_{rtype.value}"
        return (
            f"{helper}({', '.join(srcs)})",
            {helper: _siddhi32_extremum(name == "maximum", _NARROW[rtype])},
        )

    return emit


def fixed_mode_env() -> dict:
    """The helper names `@Plan:siddhi('fixed')` rebinds in generated code: maximum/minimum
    skip null arguments and compare the values themselves."""
    return {
        f"_{name}_{t.value}": (_maximum if name == "maximum" else _minimum)
        for name in ("maximum", "minimum")
        for t in _NARROW
    }


def _wall_now(ts=None):
    """currentTimeMillis() on the wall clock; playback runtimes put the event time in `_now`."""
    return int(time.time() * 1000)


# -- code generators --
def _call(helper_name, helper):
    def emit(srcs, types, args):
        return f"{helper_name}({', '.join(srcs)})", {helper_name: helper}

    return emit


def _emit_convert(srcs, types, args):
    target = TYPES[args[1].value.lower()]
    if target is STRING and types[0] is AttrType.FLOAT:  # Float.toString, not Double's
        return f"_float_str({srcs[0]})", {"_float_str": javamath.java_float_str}
    name = f"_convert_{target.value}"
    return f"{name}({srcs[0]})", {name: CONVERTERS[target]}


def _emit_cast(srcs, types, args):
    """cast() only relabels the type: Siddhi 3.2 passes the value through unchanged."""
    return srcs[0], {}


def _emit_if(srcs, types, args):
    return f"({srcs[1]} if {srcs[0]} else {srcs[2]})", {}


def _instance_of(name, pytypes, attr_type):
    def check(x):
        return (
            x is not None
            and isinstance(x, pytypes)
            and not (isinstance(x, bool) and bool not in pytypes)
        )

    def emit(srcs, types, args):
        if types[0] != AttrType.OBJECT:  # the static type decides
            return (f"({srcs[0]} is not None)" if types[0] == attr_type else "False"), {}
        helper = f"_{name}"
        return f"{helper}({srcs[0]})", {helper: check}

    return FunctionEntry(
        name,
        1,
        1,
        returns(BOOL),
        emit,
        f"{name}(value): true when the value is a {attr_type} (an object "
        f"attribute: by its value at run time), false for null",
    )


FUNCTIONS = {
    e.name: e
    for e in (
        FunctionEntry(
            "coalesce",
            1,
            None,
            lambda ts, c: same_type("coalesce", c, ts),
            _call("_coalesce", _coalesce),
            "first non-null argument",
        ),
        FunctionEntry(
            "default",
            2,
            2,
            _default,
            _call("_coalesce", _coalesce),
            "default(attr, value if attr is null)",
        ),
        FunctionEntry(
            "convert",
            2,
            2,
            _target_type("convert"),
            _emit_convert,
            "convert(value, 'type'): Java conversions, saturating from double to int",
        ),
        FunctionEntry(
            "cast",
            2,
            2,
            _target_type("cast"),
            _emit_cast,
            "cast(value, 'type'): relabels the type, the value passes through",
        ),
        FunctionEntry("ifThenElse", 3, 3, _if_then_else, _emit_if, "ifThenElse(cond, then, else)"),
        # not folded at build time (pure=False): the helper depends on the plan's siddhi mode
        FunctionEntry(
            "maximum",
            1,
            None,
            _extremum("maximum"),
            _emit_extremum("maximum"),
            "largest argument",
            pure=False,
        ),
        FunctionEntry(
            "minimum",
            1,
            None,
            _extremum("minimum"),
            _emit_extremum("minimum"),
            "smallest argument",
            pure=False,
        ),
        FunctionEntry(
            "UUID",
            0,
            0,
            returns(STRING),
            lambda s, t, a: ("_uuid()", {"_uuid": lambda: str(uuid.uuid4())}),
            "a random UUID string",
            pure=False,
        ),
        FunctionEntry(
            "currentTimeMillis",
            0,
            0,
            returns(LONG),
            lambda s, t, a: ("_now(ts)", {"_now": _wall_now}),
            "the runtime's clock",
            pure=False,
        ),
        FunctionEntry(
            "eventTimestamp",
            0,
            0,
            returns(LONG),
            lambda s, t, a: ("ts", {}),
            "the event's timestamp",
            pure=False,
        ),
        _instance_of("instanceOfBoolean", (bool,), AttrType.BOOL),
        _instance_of("instanceOfDouble", (float,), AttrType.DOUBLE),
        _instance_of("instanceOfFloat", (float,), AttrType.FLOAT),
        _instance_of("instanceOfInteger", (int,), AttrType.INT),
        _instance_of("instanceOfLong", (int,), AttrType.LONG),
        _instance_of("instanceOfString", (str,), AttrType.STRING),
    )
}
