"""Hand-built model objects for the multi-stream engine's unit tests (no compiler needed)."""

from cep.model import (
    CountState,
    EveryState,
    LogicalState,
    NextState,
    SingleInputStream,
    StateInputStream,
    StreamState,
)


def st(stream, alias):
    return StreamState(SingleInputStream(stream, alias=alias))


def nxt(*elements):
    out = elements[-1]
    for e in reversed(elements[:-1]):
        out = NextState(e, out)
    return out


def every(inner, within=None):
    return EveryState(inner, within_millis=within)


def count(stream, alias, lo, hi):
    return CountState(st(stream, alias), lo, hi)


def logical(op, a, b):
    return LogicalState(op, a, b)


def pattern(element, within=None, kind="pattern"):
    return StateInputStream(kind, element, within_millis=within)
