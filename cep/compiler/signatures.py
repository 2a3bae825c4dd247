"""The signatures of built-in functions, aggregators and windows: names, arity, types.

One table read by both the compiler's validator (to type and check calls) and the engine (to
know what exists). A function or aggregator rule gets the argument types and the call and
returns the result type, or raises TypeMismatchError. Names are Siddhi's: case-sensitive past
the first letter (`stddev`, `distinctcount`, `ifThenElse`); see `lookup()`."""
from dataclasses import dataclass
from typing import Callable, Optional

from cep.errors import TypeMismatchError
from cep.model import AttrType, Constant, NUMERIC_TYPES, TimeConstant, TYPES

INT, LONG, FLOAT, DOUBLE = AttrType.INT, AttrType.LONG, AttrType.FLOAT, AttrType.DOUBLE
STRING, BOOL, OBJECT = AttrType.STRING, AttrType.BOOL, AttrType.OBJECT
ANY = tuple(AttrType)
INTEGRAL = (INT, LONG)
_RANK = {INT: 0, LONG: 1, FLOAT: 2, DOUBLE: 3}


def widest(a, b):
    """Java's binary numeric promotion: the wider of two numeric types."""
    return a if _RANK[a] >= _RANK[b] else b


@dataclass(frozen=True)
class FunctionSignature:
    """A function or aggregator: arity bounds and a result-type rule (types, call) -> AttrType."""
    name: str
    min_args: int
    max_args: Optional[int]
    rule: Callable
    doc: str = ""


@dataclass(frozen=True)
class Param:
    """A window parameter: accepted types; `constant` when it must be a literal, `attribute`
    when it must be an attribute of the input."""
    name: str
    types: tuple
    constant: bool = True
    attribute: bool = False
    optional: bool = False
    repeat: bool = False


@dataclass(frozen=True)
class WindowSignature:
    name: str
    params: tuple  # of Param; optional ones last, a `repeat` one last of all
    doc: str = ""


def _fail(call, message, index=None):
    span = call.args[index].span if index is not None and index < len(call.args) else call.span
    raise TypeMismatchError(message, span)


def _numeric(name, call, types):
    for i, t in enumerate(types):
        if t not in NUMERIC_TYPES:
            _fail(call, f"{name} not supported for {t}: {name}() needs a number", i)


def _same_type(name, call, types):
    for i, t in enumerate(types[1:], 1):
        if t != types[0]:
            _fail(call, f"{name}() needs arguments of one type: argument 1 is {types[0]}, "
                        f"argument {i + 1} is {t}", i)
    return types[0]


# -- function rules --
def _coalesce(types, call):
    return _same_type("coalesce", call, types)


def _convert_target(name):
    def rule(types, call):
        target = call.args[1]
        if not (isinstance(target, Constant) and target.type is STRING):
            _fail(call, f"{name}() needs the target type as a string constant such as 'int'", 1)
        attr_type = TYPES.get(target.value.lower())
        if attr_type is None:
            _fail(call, f"{name}() to unknown type '{target.value}' (expected one of "
                        f"{', '.join(TYPES)})", 1)
        return attr_type
    return rule


def _if_then_else(types, call):
    if types[0] is not BOOL:
        _fail(call, f"ifThenElse() condition must be bool, not {types[0]}", 0)
    if types[1] != types[2]:
        _fail(call, f"ifThenElse() branches must have one type: then is {types[1]}, "
                    f"else is {types[2]}", 2)
    return types[1]


def _extremum(name):
    def rule(types, call):
        _numeric(name, call, types)
        return _same_type(name, call, types)
    return rule


def _default(types, call):
    if types[1] != types[0] and types[1] is not OBJECT:
        _fail(call, f"default() value must be {types[0]} like the attribute, not {types[1]}", 1)
    return types[0]


def _returns(result):
    return lambda types, call: result


FUNCTIONS = {s.name: s for s in (
    FunctionSignature("coalesce", 1, None, _coalesce, "first non-null argument"),
    FunctionSignature("convert", 2, 2, _convert_target("convert"), "convert(value, 'type')"),
    FunctionSignature("cast", 2, 2, _convert_target("cast"), "cast(value, 'type')"),
    FunctionSignature("ifThenElse", 3, 3, _if_then_else, "ifThenElse(cond, then, else)"),
    FunctionSignature("instanceOfBoolean", 1, 1, _returns(BOOL)),
    FunctionSignature("instanceOfDouble", 1, 1, _returns(BOOL)),
    FunctionSignature("instanceOfFloat", 1, 1, _returns(BOOL)),
    FunctionSignature("instanceOfInteger", 1, 1, _returns(BOOL)),
    FunctionSignature("instanceOfLong", 1, 1, _returns(BOOL)),
    FunctionSignature("instanceOfString", 1, 1, _returns(BOOL)),
    FunctionSignature("maximum", 1, None, _extremum("maximum"), "largest argument"),
    FunctionSignature("minimum", 1, None, _extremum("minimum"), "smallest argument"),
    FunctionSignature("UUID", 0, 0, _returns(STRING), "a random UUID string"),
    FunctionSignature("currentTimeMillis", 0, 0, _returns(LONG), "the runtime's clock"),
    FunctionSignature("eventTimestamp", 0, 0, _returns(LONG), "the event's timestamp"),
    FunctionSignature("default", 2, 2, _default, "default(attr, value if attr is null)"),
)}


# -- aggregator rules --
def _sum(types, call):
    _numeric("sum", call, types)
    return LONG if types[0] in INTEGRAL else DOUBLE


def _to_double(name):
    def rule(types, call):
        _numeric(name, call, types)
        return DOUBLE
    return rule


def _keep_numeric(name):
    def rule(types, call):
        _numeric(name, call, types)
        return types[0]
    return rule


AGGREGATORS = {s.name: s for s in (
    FunctionSignature("sum", 1, 1, _sum, "int/long give long, float/double give double"),
    FunctionSignature("avg", 1, 1, _to_double("avg"), "mean as a double"),
    FunctionSignature("count", 0, 1, _returns(LONG), "number of events"),
    FunctionSignature("min", 1, 1, _keep_numeric("min")),
    FunctionSignature("max", 1, 1, _keep_numeric("max")),
    FunctionSignature("stddev", 1, 1, _to_double("stddev"), "population standard deviation"),
    FunctionSignature("distinctcount", 1, 1, _returns(LONG), "number of distinct values"),
    FunctionSignature("minForever", 1, 1, _keep_numeric("minForever")),
    FunctionSignature("maxForever", 1, 1, _keep_numeric("maxForever")),
)}

_TIME = (INT, LONG)


def _w(name, *params, doc=""):
    return WindowSignature(name, params, doc)


WINDOWS = {s.name: s for s in (
    _w("length", Param("window.length", (INT,))),
    _w("lengthBatch", Param("window.length", (INT,))),
    _w("time", Param("window.time", _TIME)),
    _w("timeBatch", Param("window.time", _TIME), Param("start.time", _TIME, optional=True)),
    _w("externalTime", Param("timestamp", (LONG,), False, True), Param("window.time", _TIME)),
    _w("externalTimeBatch", Param("timestamp", (LONG,), False, True),
       Param("window.time", _TIME), Param("start.time", _TIME, False, optional=True),
       Param("timeout", _TIME, optional=True)),
    _w("timeLength", Param("window.time", _TIME), Param("window.length", (INT,))),
    _w("sort", Param("window.length", (INT,)), Param("attribute", ANY, False, repeat=True)),
    _w("unique", Param("attribute", ANY, False, True)),
    _w("firstUnique", Param("attribute", ANY, False, True)),
    _w("uniqueExternalTimeBatch", Param("attribute", ANY, False, True),
       Param("timestamp", (LONG,), False, True), Param("window.time", _TIME),
       Param("start.time", _TIME, False, optional=True), Param("timeout", _TIME, optional=True)),
    _w("frequent", Param("event.count", (INT,)),
       Param("attribute", ANY, False, True, repeat=True)),
    _w("lossyFrequent", Param("support.threshold", (DOUBLE,)),
       Param("error.bound", (DOUBLE,), optional=True),
       Param("attribute", ANY, False, True, repeat=True)),
    _w("delay", Param("window.delay", _TIME)),
    _w("cron", Param("cron.expression", (STRING,))),
)}


def lookup(table, name):
    """The signature of `name` in `table`: exact, else with its first letter's case flipped
    (Siddhi matches names case-sensitively past the first letter)."""
    found = table.get(name)
    if found is None and name:
        found = table.get(name[0].swapcase() + name[1:])
    return found


def is_aggregator(name):
    return lookup(AGGREGATORS, name) is not None


def constant_type(expr):
    """The type of a constant parameter (a time constant is a long), else None."""
    if isinstance(expr, Constant):
        return expr.type
    if isinstance(expr, TimeConstant):
        return LONG
    return None
