"""Namespaced stream processors (`from S#ns:name(...)`) and the stateful namespaced functions of
Siddhi 3.2's standard extensions (reorder, timeseries, markov, kf), beside the built-ins.

A stream processor entry names its engine class as `"module:Class"` (loaded on first use, so
the catalog imports no engine code). The class gives `signature(args, types, call)`: it checks
the parameters (positioned errors) and returns the attributes it appends to each event, which
the compiler adds to the query's scope and the engine to its rows. Plug-ins
(cep.catalog.plugins) add entries to the same tables."""

import importlib
from dataclasses import dataclass
from typing import Dict, Optional, Tuple

from cep.catalog import plugin_hook

_ENGINE = "cep.engine.ext."


@dataclass(frozen=True)
class StreamProcessorEntry:
    namespace: str
    name: str
    implementation: str  # "module:Class"; a standard extension's module is below cep.engine.ext
    doc: str = ""
    origin: str = "siddhi"  # 'siddhi' (a standard extension) or the plug-in's distribution

    @property
    def full_name(self) -> str:
        return f"{self.namespace}:{self.name}"

    def processor_class(self):
        module, _, cls = self.implementation.partition(":")
        if self.origin == "siddhi":
            module = _ENGINE + module
        return getattr(importlib.import_module(module), cls)


def _sp(namespace, name, impl, doc):
    return StreamProcessorEntry(namespace, name, impl, doc)


STREAM_PROCESSORS: Dict[Tuple[str, str], StreamProcessorEntry] = {
    (e.namespace, e.name): e
    for e in (
        _sp(
            "reorder",
            "kslack",
            "reorder:KSlack",
            "reorder:kslack(timestamp long[, timeout long[, max.k long[, discard.late bool]]]): "
            "K-slack reordering of an out-of-order stream",
        ),
        _sp(
            "markov",
            "markovChain",
            "markov:MarkovChain",
            "markov:markovChain(id, state, duration, alert.threshold, hold.limit|matrix.file"
            "[, train]): appends lastState, transitionProbability, notify",
        ),
        _sp(
            "timeseries",
            "regress",
            "timeseries:Regress",
            "timeseries:regress([interval, batch, ci,] y, x...): appends stderr, beta0..",
        ),
        _sp(
            "timeseries",
            "forecast",
            "timeseries:Forecast",
            "timeseries:forecast([interval, batch, ci,] next.x, y, x): appends "
            "forecastY, beta0, beta1",
        ),
        _sp(
            "timeseries",
            "outlier",
            "timeseries:Outlier",
            "timeseries:outlier([interval, batch, ci,] range, y, x): appends outlier, "
            "stderr, beta0, beta1",
        ),
        _sp(
            "timeseries",
            "lengthTimeRegress",
            "timeseries:LengthTimeRegress",
            "timeseries:lengthTimeRegress(time, length, [interval, ci,] y, x...)",
        ),
        _sp(
            "timeseries",
            "lengthTimeForecast",
            "timeseries:LengthTimeForecast",
            "timeseries:lengthTimeForecast(time, length, next.x, [interval, ci,] y, x)",
        ),
        _sp(
            "timeseries",
            "lengthTimeOutlier",
            "timeseries:LengthTimeOutlier",
            "timeseries:lengthTimeOutlier(time, length, range, [interval, ci,] y, x)",
        ),
        _sp(
            "timeseries",
            "kalmanMinMax",
            "extrema:KalmanMinMax",
            "timeseries:kalmanMinMax(value, Q, R, window, 'min'|'max'|'minmax')",
        ),
        _sp(
            "timeseries",
            "kernelMinMax",
            "extrema:KernelMinMax",
            "timeseries:kernelMinMax(value, bandwidth, window, 'min'|'max'|'minmax')",
        ),
    )
}


def lookup_stream_processor(namespace: Optional[str], name: str) -> Optional[StreamProcessorEntry]:
    """The entry of `#namespace:name` (names match exactly, as Siddhi's extension loader)."""
    if not namespace:
        return None
    found = STREAM_PROCESSORS.get((namespace, name))
    if found is None:
        plugin_hook.ensure_loaded(namespace)
        found = STREAM_PROCESSORS.get((namespace, name))
    return found


def known_stream_processors():
    """`#ns:name` of every registered stream processor."""
    return [f"#{e.full_name}" for e in STREAM_PROCESSORS.values()]


# namespaced scalar functions, keyed (namespace, name): cep.catalog.functions.FunctionEntry
FUNCTIONS: Dict[Tuple[str, str], object] = {}


def lookup_function(namespace: Optional[str], name: str):
    """The FunctionEntry of `namespace:name` registered here (kf, plug-ins), else None."""
    if not namespace:
        return None
    _load_functions()
    found = FUNCTIONS.get((namespace, name))
    if found is None:
        plugin_hook.ensure_loaded(namespace)
        found = FUNCTIONS.get((namespace, name))
    return found


_loaded = False


def _load_functions():
    global _loaded
    if not _loaded:
        _loaded = True
        from cep.catalog import ext_kf

        FUNCTIONS.setdefault(("kf", "kalmanFilter"), ext_kf.KALMAN_FILTER)
