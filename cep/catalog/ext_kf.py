"""`kf:kalmanFilter`, Siddhi 3.2's Kalman-filter function extension: its catalog entry (type
rule, arity 1, 2 or 4, exact argument types as the Java original checks them). Each call site
of a query gets its own filter state, as each Java executor instance has."""

from cep.catalog.functions import FunctionEntry
from cep.catalog.rules import DOUBLE, LONG, fail
from cep.engine.ext.kalman import KalmanFilter

_ORDINAL = ("first", "second", "third", "fourth")


def _rule(types, call):
    n = len(types)
    if n not in (1, 2, 4):
        fail(call, f"kf:kalmanFilter() takes 1, 2 or 4 arguments, not {n}")
    for i, t in enumerate(types):
        want = LONG if i == 3 else DOUBLE
        if t is not want:
            fail(
                call,
                f"kf:kalmanFilter(): the {_ORDINAL[i]} argument must be of type "
                f"{want.value}, not {t.value}",
                i,
            )
    return DOUBLE


_instances = {}  # id of a call's argument tuple -> (global name, filter): the safe and fast
# sources of one call site share one filter


def _emit(sources, types, args):
    key = id(args)
    found = _instances.get(key)
    if found is None or found[2] is not args:
        name = f"_kf{len(_instances)}"
        found = _instances[key] = (name, KalmanFilter(len(args)), args)
    name, instance, _ = found
    return f"{name}({', '.join(sources)})", {name: instance}


KALMAN_FILTER = FunctionEntry(
    "kalmanFilter",
    1,
    4,
    _rule,
    _emit,
    "kf:kalmanFilter(value[, noise.sd]) or (value, rate, noise.sd, "
    "timestamp): Kalman-filter estimate",
    pure=False,
)
