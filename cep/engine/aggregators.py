"""Aggregators (sum, avg, count, min, max, stddev, distinctcount, minForever, maxForever) as
code snippets that the selector inlines into its generated loop.

Each spec gives the initial slot values and Python statements that update the slots when an
event arrives (`add`), leaves (`remove`) or a batch window resets them (`reset`), and the
expression of the current value. `S(i)` is the source of slot i (a local or `st[i]`), `v` the
source of the argument's value. Running state makes the cost per event independent of the
window length; min/max keep monotonic deques with Siddhi 3's removal (the first equal value),
so their answers are Siddhi's, quirks included (see cep/engine/README.md)."""
import math
from collections import deque
from dataclasses import dataclass
from typing import Callable

from cep.engine.functions import NUM_RANK
from cep.errors import TypeMismatchError
from cep.model import AttrType

INTEGRAL = (AttrType.INT, AttrType.LONG)


@dataclass(frozen=True)
class AggSpec:
    name: str
    nargs: int
    result: Callable  # (arg_type, span) -> AttrType
    init: Callable  # (arg_type, removes) -> list of initial slot values
    add: Callable  # (S, v, removes) -> list of statement lines
    remove: Callable  # (S, v) -> lines
    value: Callable  # (S) -> expression source
    reset: Callable  # (S) -> lines


def _numeric(name, to):
    def rule(t, span):
        if t not in NUM_RANK:
            raise TypeMismatchError(f"{name}() not supported for {t}: it needs a number", span)
        return to(t)
    return rule


def _sum_type(t):
    return AttrType.LONG if t in INTEGRAL else AttrType.DOUBLE


def _dq_remove(dq, v):
    if dq and dq[0] == v:
        dq.popleft()
    else:
        try:
            dq.remove(v)
        except ValueError:
            pass


def _extreme(name, cmp):
    # cmp: '>' for min (drop larger tail values), '<' for max
    def add(S, v, removes):
        if not removes:  # no window: one running extreme in a deque of one
            better = "<" if cmp == ">" else ">"
            return [f"if {v} is not None:",
                    f"    _dq = {S(0)}",
                    f"    if not _dq: _dq.append({v})",
                    f"    elif {v} {better} _dq[0]: _dq[0] = {v}"]
        return [f"if {v} is not None:",
                f"    _dq = {S(0)}",
                f"    while _dq and _dq[-1] {cmp} {v}: _dq.pop()",
                f"    _dq.append({v})"]

    return AggSpec(
        name, 1, _numeric(name, lambda t: t),
        lambda t, removes: [deque()],
        add,
        # Siddhi 3 removes the first occurrence of the value (Deque.removeFirstOccurrence)
        lambda S, v: [f"if {v} is not None:",
                      f"    _dq = {S(0)}",
                      f"    if _dq and _dq[0] == {v}: _dq.popleft()",
                      f"    elif {v} in _dq: _dq.remove({v})"],
        lambda S: f"({S(0)}[0] if {S(0)} else None)",
        lambda S: [f"{S(0)}.clear()"],
    )


def _extreme_plain_value(S):
    return S(0)


def _forever(name, op):
    return AggSpec(
        name, 1, _numeric(name, lambda t: t),
        lambda t, removes: [None],
        lambda S, v, removes: [f"if {v} is not None and ({S(0)} is None or {v} {op} {S(0)}): {S(0)} = {v}"],
        lambda S, v: [f"if {v} is not None and ({S(0)} is None or {v} {op} {S(0)}): {S(0)} = {v}"],
        lambda S: S(0),
        lambda S: [],
    )


def _build():
    a = {}
    a["sum"] = AggSpec(
        "sum", 1, _numeric("sum", _sum_type),
        lambda t, removes: [0 if t in INTEGRAL else 0.0],
        lambda S, v, removes: [f"if {v} is not None: {S(0)} += {v}"],
        lambda S, v: [f"if {v} is not None: {S(0)} -= {v}"],
        lambda S: S(0),
        lambda S: [f"{S(0)} = {S(0)} * 0"],
    )
    a["avg"] = AggSpec(
        "avg", 1, _numeric("avg", lambda t: AttrType.DOUBLE),
        lambda t, removes: [0.0, 0],
        lambda S, v, removes: [f"if {v} is not None: {S(0)} += {v}; {S(1)} += 1"],
        lambda S, v: [f"if {v} is not None: {S(0)} -= {v}; {S(1)} -= 1"],
        lambda S: f"({S(0)} / {S(1)} if {S(1)} else 0.0)",
        lambda S: [f"{S(0)} = 0.0; {S(1)} = 0"],
    )
    a["count"] = AggSpec(
        "count", 0, lambda t, span: AttrType.LONG,
        lambda t, removes: [0],
        lambda S, v, removes: [f"{S(0)} += 1"],
        lambda S, v: [f"{S(0)} -= 1"],
        lambda S: S(0),
        lambda S: [f"{S(0)} = 0"],
    )
    a["min"] = _extreme("min", ">")
    a["max"] = _extreme("max", "<")
    a["minForever"] = _forever("minForever", "<")
    a["maxForever"] = _forever("maxForever", ">")
    a["stddev"] = AggSpec(
        "stddev", 1, _numeric("stddev", lambda t: AttrType.DOUBLE),
        lambda t, removes: [0, 0.0, 0.0, 0.0],
        lambda S, v, removes: [
            f"if {v} is not None:",
            f"    {S(0)} += 1",
            f"    if {S(0)} == 1: {S(1)} = {S(2)} = float({v}); {S(3)} = 0.0",
            f"    else: _om = {S(2)}; {S(1)} += {v}; {S(2)} = {S(1)} / {S(0)}; "
            f"{S(3)} += ({v} - _om) * ({v} - {S(2)})"],
        lambda S, v: [
            f"if {v} is not None:",
            f"    {S(0)} -= 1",
            f"    if {S(0)} <= 0: {S(0)} = 0; {S(1)} = {S(2)} = {S(3)} = 0.0",
            f"    else: _om = {S(2)}; {S(1)} -= {v}; {S(2)} = {S(1)} / {S(0)}; "
            f"{S(3)} -= ({v} - _om) * ({v} - {S(2)})"],
        # Siddhi's running sum of squares can drift below zero after removals: Java's
        # Math.sqrt then gives NaN, and so do we (no clamping)
        lambda S: f"(_jsqrt({S(3)} / {S(0)}) if {S(0)} >= 2 else 0.0)",
        lambda S: [f"{S(0)} = 0; {S(1)} = {S(2)} = {S(3)} = 0.0"],
    )
    a["distinctcount"] = AggSpec(
        "distinctcount", 1, lambda t, span: AttrType.LONG,
        lambda t, removes: [{}],
        # null is a value like any other (Siddhi 3.2 keys a HashMap by the value, null too)
        lambda S, v, removes: [f"_d = {S(0)}; _d[{v}] = _d.get({v}, 0) + 1"],
        lambda S, v: [
            f"if {v} in {S(0)}:",
            f"    _d = {S(0)}; _c = _d[{v}] - 1",
            f"    if _c: _d[{v}] = _c",
            f"    else: del _d[{v}]"],
        lambda S: f"len({S(0)})",
        lambda S: [f"{S(0)}.clear()"],
    )
    return a


AGGREGATORS = _build()
def _jsqrt(x):
    """Java's Math.sqrt: NaN for a negative argument (math.sqrt raises)."""
    return math.sqrt(x) if x >= 0.0 else math.nan


AGG_GLOBALS = {"_dq_remove": _dq_remove, "deque": deque, "_jsqrt": _jsqrt}


def lookup(name, namespace=None):
    """The AggSpec for `name`: case-sensitive past the first letter (`Sum`, not `sUm`)."""
    if namespace or not name:
        return None
    return AGGREGATORS.get(name[0].lower() + name[1:])


def result_type(name, arg_type, span=None):
    spec = lookup(name)
    return spec.result(arg_type, span) if spec else None


def result_type_of(call, arg_type, spec):
    """The result type of aggregator `call`, by the compiler's signature table when it knows
    the aggregator (one set of type rules), else by the spec's own rule."""
    try:
        from cep.compiler import signatures
    except ImportError:
        signatures = None
    sig = signatures.lookup(signatures.AGGREGATORS, call.name) if signatures else None
    if sig is not None:
        return sig.rule([arg_type] if arg_type is not None else [], call)
    return spec.result(arg_type, call.span)
