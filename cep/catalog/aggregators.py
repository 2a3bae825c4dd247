"""Aggregators (sum, avg, count, min, max, stddev, distinctcount, minForever, maxForever): one
entry per aggregator with its arity, its type rule and its implementation, as code snippets
that the engine's selector inlines into its generated loop.

An entry gives the initial slot values and Python statements that update the slots when an
event arrives (`add`), leaves (`remove`) or a batch window resets them (`reset`), and the
expression of the current value. `S(i)` is the source of slot i (a local or `st[i]`), `v` the
source of the argument's value. Running state makes the cost per event independent of the
window length; min/max keep monotonic deques with Siddhi 3's removal (the first equal value),
so their answers are Siddhi's, quirks included (see cep/engine/README.md)."""

from collections import deque

from cep.catalog.aggregator_entry import AGG_GLOBALS, AggregatorEntry  # noqa: F401 (re-exported)
from cep.catalog import plugin_hook
from cep.catalog.rules import DOUBLE, INTEGRAL, LONG, lookup as _lookup, numeric, returns


AggSpec = AggregatorEntry  # the engine's name for it


# -- type rules --
def _keep(name):
    def rule(types, call):
        numeric(name, call, types)
        return types[0]

    return rule


def _to(name, result):
    def rule(types, call):
        numeric(name, call, types)
        return result(types[0])

    return rule


# -- implementations --
def _wrap64(src):
    return f"((({src} + 9223372036854775808) & 18446744073709551615) - 9223372036854775808)"


def _extreme(name, cmp, doc):
    # cmp: '>' for min (drop larger tail values), '<' for max
    def add(S, v, removes):
        if not removes:  # no window: one running extreme in a deque of one
            better = "<" if cmp == ">" else ">"
            return [
                f"if {v} is not None:",
                f"    _dq = {S(0)}",
                f"    if not _dq: _dq.append({v})",
                f"    elif {v} {better} _dq[0]: _dq[0] = {v}",
            ]
        return [
            f"if {v} is not None:",
            f"    _dq = {S(0)}",
            f"    while _dq and _dq[-1] {cmp} {v}: _dq.pop()",
            f"    _dq.append({v})",
        ]

    return AggregatorEntry(
        name,
        1,
        1,
        1,
        _keep(name),
        lambda t, removes: [deque()],
        add,
        # Siddhi 3 removes the first occurrence of the value (Deque.removeFirstOccurrence)
        lambda S, v: [
            f"if {v} is not None:",
            f"    _dq = {S(0)}",
            f"    if _dq and _dq[0] == {v}: _dq.popleft()",
            f"    elif {v} in _dq: _dq.remove({v})",
        ],
        lambda S, t: f"({S(0)}[0] if {S(0)} else None)",
        lambda S: [f"{S(0)}.clear()"],
        doc,
    )


def _forever(name, op):
    line = lambda S, v: [  # noqa: E731
        f"if {v} is not None and ({S(0)} is None or {v} {op} {S(0)}): {S(0)} = {v}"
    ]
    return AggregatorEntry(
        name,
        1,
        1,
        1,
        _keep(name),
        lambda t, removes: [None],
        lambda S, v, removes: line(S, v),
        line,
        lambda S, t: S(0),
        lambda S: [],
        "over every event so far, whatever the window",
    )


SUM = AggregatorEntry(
    "sum",
    1,
    1,
    1,
    _to("sum", lambda t: LONG if t in INTEGRAL else DOUBLE),
    lambda t, removes: [0 if t in INTEGRAL else 0.0],
    lambda S, v, removes: [f"if {v} is not None: {S(0)} += {v}"],
    lambda S, v: [f"if {v} is not None: {S(0)} -= {v}"],
    lambda S, t: _wrap64(S(0)) if t in INTEGRAL else S(0),  # a Java long wraps
    lambda S: [f"{S(0)} = {S(0)} * 0"],
    "int/long give long, float/double give double",
)

AVG = AggregatorEntry(
    "avg",
    1,
    1,
    1,
    _to("avg", lambda t: DOUBLE),
    lambda t, removes: [0.0, 0],
    lambda S, v, removes: [f"if {v} is not None: {S(0)} += {v}; {S(1)} += 1"],
    lambda S, v: [f"if {v} is not None: {S(0)} -= {v}; {S(1)} -= 1"],
    lambda S, t: f"({S(0)} / {S(1)} if {S(1)} else 0.0)",
    lambda S: [f"{S(0)} = 0.0; {S(1)} = 0"],
    "mean as a double; 0.0 when empty",
)

COUNT = AggregatorEntry(
    "count",
    0,
    1,
    0,
    returns(LONG),
    lambda t, removes: [0],
    lambda S, v, removes: [f"{S(0)} += 1"],
    lambda S, v: [f"{S(0)} -= 1"],
    lambda S, t: S(0),
    lambda S: [f"{S(0)} = 0"],
    "number of events",
)

STDDEV = AggregatorEntry(
    "stddev",
    1,
    1,
    1,
    _to("stddev", lambda t: DOUBLE),
    lambda t, removes: [0, 0.0, 0.0, 0.0],
    lambda S, v, removes: [
        f"if {v} is not None:",
        f"    {S(0)} += 1",
        f"    if {S(0)} == 1: {S(1)} = {S(2)} = float({v}); {S(3)} = 0.0",
        f"    else: _om = {S(2)}; {S(1)} += {v}; {S(2)} = {S(1)} / {S(0)}; "
        f"{S(3)} += ({v} - _om) * ({v} - {S(2)})",
    ],
    lambda S, v: [
        f"if {v} is not None:",
        f"    {S(0)} -= 1",
        f"    if {S(0)} <= 0: {S(0)} = 0; {S(1)} = {S(2)} = {S(3)} = 0.0",
        f"    else: _om = {S(2)}; {S(1)} -= {v}; {S(2)} = {S(1)} / {S(0)}; "
        f"{S(3)} -= ({v} - _om) * ({v} - {S(2)})",
    ],
    # Siddhi's running sum of squares can drift below zero after removals: Java's Math.sqrt
    # then gives NaN, and so do we (no clamping)
    lambda S, t: f"(_jsqrt({S(3)} / {S(0)}) if {S(0)} >= 2 else 0.0)",
    lambda S: [f"{S(0)} = 0; {S(1)} = {S(2)} = {S(3)} = 0.0"],
    "population standard deviation, kept incrementally as Siddhi 3.2 does",
)

DISTINCTCOUNT = AggregatorEntry(
    "distinctcount",
    1,
    1,
    1,
    returns(LONG),
    lambda t, removes: [{}],
    # null is a value like any other (Siddhi 3.2 keys a HashMap by the value, null too)
    lambda S, v, removes: [f"_d = {S(0)}; _d[{v}] = _d.get({v}, 0) + 1"],
    lambda S, v: [
        f"if {v} in {S(0)}:",
        f"    _d = {S(0)}; _c = _d[{v}] - 1",
        f"    if _c: _d[{v}] = _c",
        f"    else: del _d[{v}]",
    ],
    lambda S, t: f"len({S(0)})",
    lambda S: [f"{S(0)}.clear()"],
    "number of distinct values, null included",
)

AGGREGATORS = {
    e.name: e
    for e in (
        SUM,
        AVG,
        COUNT,
        STDDEV,
        DISTINCTCOUNT,
        _extreme("min", ">", "smallest value in the window"),
        _extreme("max", "<", "largest value in the window"),
        _forever("minForever", "<"),
        _forever("maxForever", ">"),
    )
}


def lookup(name, namespace=None):
    """The entry of `name`: case-sensitive past the first letter (`Sum`, not `sUm`); a
    namespaced name is an extension's (`math:percentile`, cep.catalog.ext) or a plug-in's
    (cep.catalog.plugin_hook)."""
    if namespace:
        from cep.catalog.ext.aggregators import lookup as ext_lookup

        found = ext_lookup(namespace, name)
        if found is not None:
            return found
        plugin_hook.ensure_loaded(namespace)
        return plugin_hook.AGGREGATORS.get((namespace, name))
    return _lookup(AGGREGATORS, name, namespace)


def bind(entry, call):
    """`entry` specialised for `call` (an extension aggregator's constant parameters)."""
    if entry in AGGREGATORS.values():
        return entry
    from cep.catalog.ext.aggregators import bind as ext_bind

    return ext_bind(entry, call)


def is_aggregator(name):
    return lookup(name) is not None


def result_type_of(call, arg_type, entry):
    """The result type of aggregator `call` whose argument has type `arg_type` (None: none)."""
    return entry.rule([arg_type] if arg_type is not None else [], call)
