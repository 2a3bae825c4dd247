"""Built-in scalar functions of Siddhi 3 core: name -> result-type rule and code generator.

Shared by the code generator here and (through `FUNCTIONS` and `result_type`) by anyone who
validates plans. Each generator gets the argument sources and types and returns Python source
plus the globals it needs. Aggregators live in `cep.engine.aggregators`."""
import uuid
from dataclasses import dataclass
from typing import Callable, Optional

from cep.engine import javamath
from cep.model import AttrType, Constant

NUM_RANK = {AttrType.INT: 0, AttrType.LONG: 1, AttrType.FLOAT: 2, AttrType.DOUBLE: 3}


def widest(types):
    """The Java promotion of numeric types (int < long < float < double)."""
    return max(types, key=lambda t: NUM_RANK.get(t, -1))


@dataclass(frozen=True)
class FunctionSpec:
    name: str
    min_args: int
    max_args: Optional[int]
    result: Callable  # (arg_types, arg_exprs) -> AttrType
    emit: Callable  # (arg_sources, arg_types, arg_exprs) -> (source, globals)


def _type_param(args, i, fname):
    a = args[i] if len(args) > i else None
    if not isinstance(a, Constant) or not isinstance(a.value, str) or a.value.lower() not in {
            t.value for t in AttrType}:
        from cep.errors import TypeMismatchError
        raise TypeMismatchError(f"{fname}() needs a type name ('int', 'double', ...) as "
                                f"argument {i + 1}", getattr(a, "span", None))
    return AttrType(a.value.lower())


def _to_bool(x):
    if x is None:
        return None
    if isinstance(x, str):
        return x.strip().lower() == "true"
    return bool(x)


def _to_int(x, lo, hi):
    if x is None:
        return None
    try:
        if isinstance(x, str):
            s = x.strip()
            v = int(s) if s.lstrip("+-").isdigit() else int(float(s))
        elif isinstance(x, float):  # Java's (int)/(long): truncates, saturates, NaN is 0
            return javamath.d2i(x, lo, hi)
        else:
            v = int(x)
    except (ValueError, OverflowError):
        return None
    return javamath.wrap32(v) if hi == javamath.INT_MAX else javamath.wrap64(v)


def _to_float(x):
    if x is None:
        return None
    try:
        return float(x)
    except (ValueError, TypeError):
        return None


CONVERTERS = {
    AttrType.STRING: javamath.java_str,
    AttrType.INT: lambda x: _to_int(x, javamath.INT_MIN, javamath.INT_MAX),
    AttrType.LONG: lambda x: _to_int(x, javamath.LONG_MIN, javamath.LONG_MAX),
    AttrType.DOUBLE: _to_float,
    AttrType.FLOAT: lambda x: javamath.f32(_to_float(x)),
    AttrType.BOOL: _to_bool,
    AttrType.OBJECT: lambda x: x,
}


def _call(helper_name, helper):
    def emit(srcs, types, args):
        return f"{helper_name}({', '.join(srcs)})", {helper_name: helper}
    return emit


def _wall_now(ts=None):
    """currentTimeMillis() on the wall clock; playback runtimes put the event time in `_now`."""
    import time
    return int(time.time() * 1000)


def _coalesce(*xs):
    for x in xs:
        if x is not None:
            return x
    return None


def _maximum(*xs):
    xs = [x for x in xs if x is not None]
    return max(xs) if xs else None


def _minimum(*xs):
    xs = [x for x in xs if x is not None]
    return min(xs) if xs else None


def _emit_convert(srcs, types, args):
    target = _type_param(args, 1, "convert")
    name = f"_convert_{target.value}"
    return f"{name}({srcs[0]})", {name: CONVERTERS[target]}


def _emit_if(srcs, types, args):
    return f"({srcs[1]} if {srcs[0]} else {srcs[2]})", {}


def _instance_of(pytypes, attr_types):
    def check(x):
        return x is not None and isinstance(x, pytypes) and not (
            isinstance(x, bool) and bool not in pytypes)

    def emit(srcs, types, args):
        t = types[0]
        if t != AttrType.OBJECT:  # the static type decides
            ok = t in attr_types
            return (f"({srcs[0]} is not None)" if ok else "False"), {}
        name = f"_instanceof_{'_'.join(p.__name__ for p in pytypes)}"
        return f"{name}({srcs[0]})", {name: check}
    return FunctionSpec("", 1, 1, lambda ts, a: AttrType.BOOL, emit)


def _same_as_first(types, args):
    return types[0] if types else AttrType.OBJECT


def _spec(name, lo, hi, result, emit):
    return FunctionSpec(name, lo, hi, result, emit)


def _build():
    f = {}
    f["coalesce"] = _spec("coalesce", 1, None, _same_as_first, _call("_coalesce", _coalesce))
    f["default"] = _spec("default", 2, 2, _same_as_first, _call("_coalesce", _coalesce))
    f["ifThenElse"] = _spec("ifThenElse", 3, 3, lambda ts, a: ts[1], _emit_if)
    f["convert"] = _spec("convert", 2, 2, lambda ts, a: _type_param(a, 1, "convert"),
                         _emit_convert)
    # cast() only relabels the type: Siddhi 3.2 passes the value through unchanged
    f["cast"] = _spec("cast", 2, 2, lambda ts, a: _type_param(a, 1, "cast"),
                      lambda s, t, a: (s[0], {}))
    f["maximum"] = _spec("maximum", 1, None, lambda ts, a: widest(ts), _call("_maximum", _maximum))
    f["minimum"] = _spec("minimum", 1, None, lambda ts, a: widest(ts), _call("_minimum", _minimum))
    f["UUID"] = _spec("UUID", 0, 0, lambda ts, a: AttrType.STRING,
                      lambda s, t, a: ("_uuid()", {"_uuid": lambda: str(uuid.uuid4())}))
    f["currentTimeMillis"] = _spec("currentTimeMillis", 0, 0, lambda ts, a: AttrType.LONG,
                                   lambda s, t, a: ("_now(ts)", {"_now": _wall_now}))
    f["eventTimestamp"] = _spec("eventTimestamp", 0, 0, lambda ts, a: AttrType.LONG,
                                lambda s, t, a: ("ts", {}))
    for fname, pyt, ats in (
            ("instanceOfBoolean", (bool,), (AttrType.BOOL,)),
            ("instanceOfDouble", (float,), (AttrType.DOUBLE,)),
            ("instanceOfFloat", (float,), (AttrType.FLOAT,)),
            ("instanceOfInteger", (int,), (AttrType.INT,)),
            ("instanceOfLong", (int,), (AttrType.LONG,)),
            ("instanceOfString", (str,), (AttrType.STRING,))):
        spec = _instance_of(pyt, ats)
        f[fname] = FunctionSpec(fname, 1, 1, spec.result, spec.emit)
    return f


FUNCTIONS = _build()


def lookup(name, namespace=None):
    """The FunctionSpec for `name` (no namespace: Siddhi core), or None."""
    if namespace or not name:
        return None
    return FUNCTIONS.get(name) or FUNCTIONS.get(name[0].swapcase() + name[1:])


def result_type_of(call, arg_types, spec):
    """The result type of `call`, by the compiler's signature table (one set of type rules for
    the validator and the engine), else by the engine's own rule."""
    try:
        from cep.compiler import signatures
    except ImportError:  # the engine also runs on models built without the compiler
        signatures = None
    sig = signatures.lookup(signatures.FUNCTIONS, call.name) if (
        signatures is not None and not call.namespace) else None
    if sig is not None:
        return sig.rule(list(arg_types), call)
    return spec.result(list(arg_types), tuple(call.args))


def result_type(name, arg_types, args=(), namespace=None):
    """Result type of a call, or None when the function is unknown."""
    spec = lookup(name, namespace)
    return spec.result(list(arg_types), tuple(args)) if spec else None
