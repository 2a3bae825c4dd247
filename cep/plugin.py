"""The plug-in API: add functions, aggregators, windows and stream processors to SiddhiQL
without forking this project.

A plug-in is an installed Python distribution that names an `Extension` in the entry-point
group `sparkcep.extensions`:

    # pyproject.toml of the plug-in
    [project.entry-points."sparkcep.extensions"]
    geo2 = "mygeo:EXTENSION"

    # mygeo.py
    from cep.plugin import Extension, Aggregator, StreamProcessor

    EXTENSION = Extension("geo2", "distances on the sphere")

    @EXTENSION.function("km", returns="double", args=4)
    def km(lat1, lon1, lat2, lon2): ...          # called as geo2:km(a, b, c, d)

    @EXTENSION.aggregator("spread", returns="double")
    class Spread(Aggregator): ...                 # geo2:spread(x) in a select

    @EXTENSION.stream_processor("near")
    class Near(StreamProcessor): ...              # from S#geo2:near(...)

    @EXTENSION.window("lastKm", params=[...])
    class LastKm(Window): ...                     # from S#window.geo2:lastKm(...)

The compiler finds plug-ins when a plan names their namespace, checks their calls with
positioned errors, and `cep extensions` lists them. A namespace of Siddhi's standard
extensions (str, math, time, ...) cannot be taken. Topologies ship an installed plug-in's
distribution to the Spark executors with the rest of the environment.
"""

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Optional, Sequence, Tuple, TypeVar, Union

from cep.catalog.rules import fail
from cep.catalog.windows import Param  # noqa: F401  (window parameters, re-exported)
from cep.engine.ext.base import ExtParams, ExtStreamProcessor
from cep.engine.windows.base import WindowParams, WindowProcessor
from cep.model import TYPES, AttrType

GROUP = "sparkcep.extensions"

# the base classes plug-ins extend
StreamProcessor = ExtStreamProcessor
Window = WindowProcessor
StreamProcessorParams = ExtParams
WindowParameters = WindowParams
TypeRule = Callable[[Sequence[AttrType], object], AttrType]
# what the registering decorators take and give back unchanged
F = TypeVar("F", bound=Callable[..., Any])
C = TypeVar("C", bound=type)


class Aggregator:
    """One group's running aggregate: the engine calls `add` when an event enters the
    window, `remove` when it leaves, `value` for the current result. A new instance starts
    every group (and every batch of a batch window)."""

    def add(self, value: Any) -> None:
        raise NotImplementedError

    def remove(self, value: Any) -> None:
        raise NotImplementedError

    def value(self) -> Any:
        raise NotImplementedError


def _type_rule(returns: Union[str, AttrType, TypeRule], what: str) -> TypeRule:
    if callable(returns) and not isinstance(returns, AttrType):
        return returns
    attr_type = returns if isinstance(returns, AttrType) else TYPES.get(str(returns).lower())
    if attr_type is None:
        raise ValueError(f"{what}: unknown return type {returns!r} (one of {', '.join(TYPES)})")
    return lambda types, call: attr_type


def _arity(args: Union[int, Tuple[int, Optional[int]]]) -> Tuple[int, Optional[int]]:
    if isinstance(args, int):
        return args, args
    low, high = args
    return int(low), (None if high is None else int(high))


@dataclass
class Extension:
    """A namespace of user-defined functions, aggregators, windows and stream processors."""

    namespace: str
    description: str = ""
    functions: Dict[str, Dict[str, Any]] = field(default_factory=dict)
    aggregators: Dict[str, Dict[str, Any]] = field(default_factory=dict)
    windows: Dict[str, Dict[str, Any]] = field(default_factory=dict)
    stream_processors: Dict[str, type] = field(default_factory=dict)

    def function(
        self,
        name: str,
        returns: Union[str, AttrType, TypeRule],
        args: Union[int, Tuple[int, Optional[int]]] = (0, None),
        pure: bool = True,
        doc: str = "",
    ) -> Callable[[F], F]:
        """Register `fn(*values)` as `namespace:name(...)`. `returns` is a type name, an
        AttrType or a rule `(arg types, call) -> AttrType` that may reject the arguments
        with `cep.plugin.reject(call, message, index)`; `args` an arity or (min, max)."""
        low, high = _arity(args)

        def register(fn: F) -> F:
            self.functions[name] = {
                "fn": fn,
                "rule": _type_rule(returns, name),
                "min": low,
                "max": high,
                "pure": pure,
                "doc": doc or fn.__doc__ or "",
            }
            return fn

        return register

    def aggregator(
        self, name: str, returns: Union[str, AttrType, TypeRule], doc: str = ""
    ) -> Callable[[C], C]:
        """Register an `Aggregator` subclass as `namespace:name(value)` (one argument)."""

        def register(cls: C) -> C:
            self.aggregators[name] = {
                "cls": cls,
                "rule": _type_rule(returns, name),
                "doc": doc or cls.__doc__ or "",
            }
            return cls

        return register

    def window(self, name: str, params: Sequence[Param] = (), doc: str = "") -> Callable[[C], C]:
        """Register a `Window` (WindowProcessor) subclass as `#window.namespace:name(...)`;
        `params` are `Param`s the compiler checks the call against."""

        def register(cls: C) -> C:
            self.windows[name] = {
                "cls": cls,
                "params": tuple(params),
                "doc": doc or cls.__doc__ or "",
            }
            return cls

        return register

    def stream_processor(self, name: str) -> Callable[[C], C]:
        """Register a `StreamProcessor` subclass as `#namespace:name(...)`: it gives
        `signature(args, types, call)` (the attributes it appends), `parse(params)` and
        `process(batch)`."""

        def register(cls: C) -> C:
            self.stream_processors[name] = cls
            return cls

        return register


def reject(call: Any, message: str, index: Optional[int] = None) -> None:
    """Raise a positioned TypeMismatchError at argument `index` of `call` (else the call)."""
    fail(call, message, index)


__all__ = [
    "Aggregator",
    "Extension",
    "GROUP",
    "Param",
    "StreamProcessor",
    "StreamProcessorParams",
    "Window",
    "WindowParameters",
    "reject",
    "AttrType",
]
