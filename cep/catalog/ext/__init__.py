"""Namespaced extensions (`str:concat(...)`, `math:ceil(...)`): a registry of function entries
per namespace, beside the built-ins of `cep.catalog.functions`.

Each namespace lives in its own module and is imported on first use (so `lxml` loads only for
plans that use `map:`). `register(namespace, entries)` files entries; `lookup(namespace, name)`
finds one; `find_function(name, namespace)` serves built-ins and extensions alike.
Namespaces that need an online service (`geo`) or a missing evaluator (`pmml`) are known but
refused with a reason, so a plan that uses them gets a positioned error that says why."""

import importlib
from typing import Dict, Iterable, Optional

from cep.catalog import rules
from cep.catalog.functions import FUNCTIONS, FunctionEntry
from cep.errors import EngineError, TypeMismatchError, UnknownFunctionError

# namespace -> module that registers its functions when imported
MODULES = {
    "str": "cep.catalog.ext.string",
    "math": "cep.catalog.ext.math",
    "regex": "cep.catalog.ext.regex",
    "time": "cep.catalog.ext.time",
    "map": "cep.catalog.ext.map",
}

# namespaces (and `ns:name`s) that exist in Siddhi / CEP 4.0 but are refused here, with why
REFUSED = {
    "geo": "geo:geocode and geo:reverseGeocode call an online geocoding service; this "
    "runtime runs offline and does not fake them",
    "geodashboard": "it is the geo dashboard sample's own extension of WSO2 CEP 4.0 (it "
    "feeds that sample's web dashboard), not part of Siddhi",
    "pmml": "#pmml:predict needs a PMML evaluator and no well-kept pure-Python one exists "
    "on PyPI (pypmml 1.5.8 and jpmml-evaluator 0.16.0 run a JVM engine, "
    "sklearn-pmml-model 1.0.8 reads only some model types into scikit-learn, nyoka "
    "only writes PMML), so PMML models are not supported",
}

_REGISTRY: Dict[str, Dict[str, FunctionEntry]] = {}


class ExtensionError(EngineError, ValueError):
    """A namespaced function failed on one event's values (Siddhi's
    ExecutionPlanRuntimeException): that event is dropped and the error reported."""


def register(namespace: str, entries: Iterable[FunctionEntry]) -> None:
    """File `entries` under `namespace` (later entries of one name replace earlier ones)."""
    table = _REGISTRY.setdefault(namespace, {})
    for e in entries:
        table[e.name] = e


def _table(namespace: str) -> Optional[Dict[str, FunctionEntry]]:
    if namespace not in _REGISTRY and namespace in MODULES:
        importlib.import_module(MODULES[namespace])
    return _REGISTRY.get(namespace)


def namespaces() -> list:
    """Every namespace with functions (loaded or not)."""
    return sorted(set(MODULES) | set(_REGISTRY))


def names(namespace: str) -> list:
    table = _table(namespace)
    return sorted(table) if table else []


def lookup(namespace: str, name: str) -> Optional[FunctionEntry]:
    """The entry of `namespace:name` (names match exactly, as Siddhi's extension maps do)."""
    table = _table(namespace)
    return None if table is None else table.get(name)


# the geo functions that work offline (within, intersects, proximity, stationary, ...) come
# from CEP 4.0's GPL geo extension, which is not part of Siddhi 3.2.15
_GEO_ONLINE = {"geocode", "reversegeocode"}
_GEO_GPL = (
    "it belongs to WSO2 CEP 4.0's GPL-licensed geo extension (siddhi-gpl-execution-geo), "
    "which is not part of Siddhi 3.2.15's standard extensions and is not provided here"
)

# built-in functions of older Siddhi versions that Siddhi 3.2 removed, with what replaces them
REMOVED_BUILTINS = {
    "isnull": "isNull(x) was a function of Siddhi 3.0 (WSO2 CEP 4.0.0); Siddhi 3.2 removed it: "
    "write `x is null`",
}


def refusal(namespace: Optional[str], name: str = "") -> Optional[str]:
    """Why `namespace:name` is refused, or None when it is not a refused extension."""
    ns = (namespace or "").lower()
    if ns == "geo" and name and name.lower() not in _GEO_ONLINE:
        return _GEO_GPL
    return REFUSED.get(ns)


def find_function(name: str, namespace: Optional[str] = None) -> Optional[FunctionEntry]:
    """A built-in (no namespace) or an extension function entry, else None."""
    if not namespace:
        return rules.lookup(FUNCTIONS, name)
    return lookup(namespace, name)


def unknown_function_error(name: str, namespace: Optional[str], span) -> Exception:
    """The positioned error for a call nothing provides, listing what does exist."""
    if not namespace:
        removed = REMOVED_BUILTINS.get(name.lower())
        if removed is not None:
            return UnknownFunctionError(f"'{name}' is not a function: {removed}", span)
        return UnknownFunctionError(f"'{name}' is neither a function nor an aggregator", span)
    reason = refusal(namespace, name)
    if reason is not None:
        return UnknownFunctionError(f"'{namespace}:{name}' is not supported: {reason}", span)
    if lookup(namespace, name) is None and _table(namespace) is not None:
        return UnknownFunctionError(
            f"'{namespace}:{name}' is not a function of the '{namespace}' extension (it has: "
            f"{', '.join(names(namespace))})",
            span,
        )
    return UnknownFunctionError(
        f"'{namespace}:{name}': no extension namespace '{namespace}' (known: "
        f"{', '.join(namespaces())})",
        span,
    )


def check_arity(entry: FunctionEntry, call, namespace: str) -> None:
    """`call` has as many arguments as `entry` takes, else a positioned error."""
    n, low, high = len(call.args), entry.min_args, entry.max_args
    if low <= n and (high is None or n <= high):
        return
    expected = (
        str(low) if low == high else (f"{low} to {high}" if high is not None else f"at least {low}")
    )
    raise TypeMismatchError(
        f"{namespace}:{entry.name}() takes {expected} argument"
        f"{'' if expected == '1' else 's'}, not {n} (invalid number of "
        f"arguments)",
        call.span,
    )
