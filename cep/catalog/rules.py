"""Type rules shared by the catalog's entries: Java's numeric promotion, arity and argument
checks that raise positioned TypeMismatchErrors, and Siddhi's name matching."""

from cep.errors import TypeMismatchError
from cep.model import AttrType, Constant, NUMERIC_TYPES, TimeConstant

INT, LONG, FLOAT, DOUBLE = AttrType.INT, AttrType.LONG, AttrType.FLOAT, AttrType.DOUBLE
STRING, BOOL, OBJECT = AttrType.STRING, AttrType.BOOL, AttrType.OBJECT
ANY = tuple(AttrType)
INTEGRAL = (INT, LONG)
NUM_RANK = {INT: 0, LONG: 1, FLOAT: 2, DOUBLE: 3}


def widest(a, b):
    """Java's binary numeric promotion: the wider of two numeric types."""
    return a if NUM_RANK[a] >= NUM_RANK[b] else b


def widest_of(types):
    """The Java promotion of several numeric types (int < long < float < double)."""
    return max(types, key=lambda t: NUM_RANK.get(t, -1))


def fail(call, message, index=None):
    """Raise a TypeMismatchError at argument `index` of `call` (else at the call)."""
    args = getattr(call, "args", ())
    span = args[index].span if index is not None and index < len(args) else call.span
    raise TypeMismatchError(message, span)


def numeric(name, call, types):
    for i, t in enumerate(types):
        if t not in NUMERIC_TYPES:
            fail(call, f"{name} not supported for {t}: {name}() needs a number", i)


def same_type(name, call, types):
    for i, t in enumerate(types[1:], 1):
        if t != types[0]:
            fail(
                call,
                f"{name}() needs arguments of one type: argument 1 is {types[0]}, "
                f"argument {i + 1} is {t}",
                i,
            )
    return types[0]


def returns(result):
    return lambda types, call: result


def check_arity(entry, call):
    """`call` has as many arguments as `entry` takes."""
    n = len(call.args)
    low, high = entry.min_args, entry.max_args
    if n < low or (high is not None and n > high):
        expected = (
            str(low)
            if low == high
            else (f"{low} to {high}" if high is not None else f"at least {low}")
        )
        raise TypeMismatchError(
            f"{call.name}() takes {expected} argument{'' if expected == '1' else 's'}, not {n}",
            call.span,
        )


def lookup(table, name, namespace=None):
    """The entry of `name` in `table`: exact, else with its first letter's case flipped
    (Siddhi matches names case-sensitively past the first letter). Namespaced names are not
    built in."""
    if namespace or not name:
        return None
    found = table.get(name)
    if found is None:
        found = table.get(name[0].swapcase() + name[1:])
    return found


def constant_type(expr):
    """The type of a constant parameter (a time constant is a long), else None."""
    if isinstance(expr, Constant):
        return expr.type
    if isinstance(expr, TimeConstant):
        return LONG
    return None
