"""Namespaced aggregators: `math:percentile(value, p)` of Siddhi 3.2.15's math extension, as an
AggregatorEntry like the built-ins (code snippets over state slots that the selector inlines),
specialised per call for its constant percentile `p`."""

import bisect
import math
from dataclasses import replace

from cep.catalog import aggregator_entry as builtin
from cep.catalog.ext.support import DOUBLE, FLOAT, INT, LONG, fail
from cep.model import Constant

_NUMBERS = (INT, LONG, FLOAT, DOUBLE)


def percentile_value(values, p):
    """PercentileFunctionExtension.getPercentileValue over the sorted values (fails, giving
    null, on an empty window as Java's list.get(-1) does)."""
    n = len(values)
    pos = p * n / 100.0
    if pos % 1.0 == 0:
        i = int(pos)
        if i == n:
            return values[i - 1] if i >= 1 else None
        if i < 1:
            return None
        return (values[i - 1] + values[i]) / 2.0
    i = _java_round(pos)
    return values[0] if i == 0 else values[i - 1]


def _java_round(x):
    r = math.floor(x)
    return r + (x - r >= 0.5)


def _remove(values, v):
    i = bisect.bisect_left(values, v)
    if i < len(values) and values[i] == v:
        del values[i]


def _rule(types, call):
    if len(types) != 2:
        fail(
            call,
            f"math:percentile() has to have exactly 2 parameters (value, percentile), "
            f"not {len(types)}",
        )
    if types[0] not in _NUMBERS:
        fail(
            call,
            f"math:percentile() not supported for {types[0].value}: the value must be a number",
            0,
        )
    p = call.args[1]
    if not isinstance(p, Constant):
        fail(call, "math:percentile(): the percentile value has to be a constant", 1)
    if types[1] is not DOUBLE:
        fail(
            call,
            f"math:percentile(): the percentile value should be of type double, not "
            f"{types[1].value}",
            1,
        )
    if not 0 < float(p.value) <= 100:
        fail(
            call,
            f"math:percentile(): the percentile value should be in the 0 < p <= 100 "
            f"range, not {p.value}",
            1,
        )
    return DOUBLE


PERCENTILE = builtin.AggregatorEntry(
    "percentile",
    2,
    None,
    1,
    _rule,  # the rule checks the count in Siddhi's words
    lambda t, removes: [[]],
    lambda S, v, removes: [f"if {v} is not None: _ext_insort({S(0)}, float({v}))"],
    lambda S, v: [f"if {v} is not None: _ext_premove({S(0)}, float({v}))"],
    lambda S, t: f"_ext_percentile({S(0)}, P)",  # P: bound per call, see `bind`
    lambda S: [f"{S(0)}.clear()"],
    "percentile(value, p): the p-th percentile (0 < p <= 100) of the values in the window, "
    "as Siddhi's math extension computes it",
)

builtin.AGG_GLOBALS.update(
    {"_ext_insort": bisect.insort, "_ext_premove": _remove, "_ext_percentile": percentile_value}
)


def bind(entry, call):
    """The entry specialised for one call: its constant parameters baked into the snippets."""
    if entry is PERCENTILE:
        p = float(call.args[1].value)
        return replace(entry, value=lambda S, t: f"_ext_percentile({S(0)}, {p!r})")
    return entry


AGGREGATORS = {("math", "percentile"): PERCENTILE}


def lookup(namespace, name):
    return AGGREGATORS.get((namespace, name))
