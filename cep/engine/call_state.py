"""Per-copy state of stateful function calls (`kf:kalmanFilter`): a partition's per-key copy of
a processor gets call sites of its own, as Siddhi 3.2 clones each expression executor per key.

A stateful call site is an object with `call_state = True` and `fresh()` (a new, empty state
of the same call) in the globals of the generated functions that call it. A processor's clone
shares the compiled code; `fresh_call_state` rebinds the copy's functions (its own, and those
of its `code`) to globals holding fresh call sites."""

import copy
import types
from typing import Any


def _stateful(fn: Any) -> bool:
    return isinstance(fn, types.FunctionType) and any(
        getattr(v, "call_state", False) for v in fn.__globals__.values()
    )


def _functions(obj: Any) -> list[tuple[Any, str]]:
    """(holder, attribute) of every generated function of `obj` and of its `code`."""
    out = []
    for holder in (obj, getattr(obj, "code", None)):
        if holder is None or not hasattr(holder, "__dict__"):
            continue
        out.extend(
            (holder, name) for name, v in vars(holder).items() if isinstance(v, types.FunctionType)
        )
    return out


def has_call_state(obj: Any) -> bool:
    """Whether a processor's generated functions call a stateful function."""
    return any(_stateful(getattr(h, n)) for h, n in _functions(obj))


def fresh_call_state(obj: Any) -> None:
    """Give the clone `obj` fresh call sites, in place (its `code` is copied, not changed)."""
    code = getattr(obj, "code", None)
    if code is not None and any(_stateful(v) for v in vars(code).values()):
        obj.code = copy.copy(code)
    memo: dict[int, Any] = {}  # one call site, however many functions call it
    for holder, name in _functions(obj):
        fn = getattr(holder, name)
        if _stateful(fn):
            setattr(holder, name, _rebind(fn, memo))


def _rebind(fn: types.FunctionType, memo: dict) -> types.FunctionType:
    g = {}
    for k, v in fn.__globals__.items():
        if getattr(v, "call_state", False):
            if id(v) not in memo:
                memo[id(v)] = v.fresh()
            v = memo[id(v)]
        g[k] = v
    new = types.FunctionType(fn.__code__, g, fn.__name__, fn.__defaults__, fn.__closure__)
    new.__kwdefaults__ = fn.__kwdefaults__
    new.__dict__.update(fn.__dict__)
    return new
