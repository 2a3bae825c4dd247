"""Plug-ins: discovery of the installed distributions that register an `Extension`
(cep.plugin) in the entry-point group `sparkcep.extensions`, and their entries beside the
built-ins: functions and stream processors in cep.catalog.ext_processors, aggregators and
windows here (cep.catalog.aggregators and cep.catalog.windows look namespaced names up here).

Discovery is lazy: the first lookup of a namespace that no standard extension owns loads
every plug-in once. A plug-in that fails to load, is not an Extension, takes a standard
namespace or one another plug-in took is refused; `cep extensions` lists it with the
reason, and plans that use its namespace get the usual positioned "unknown" error."""

import importlib.metadata as metadata
import logging
import threading
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

from cep.catalog import ext_processors, plugin_hook
from cep.catalog.aggregator_entry import AGG_GLOBALS, AggregatorEntry
from cep.catalog.functions import FunctionEntry
from cep.catalog.windows import WindowEntry

GROUP = "sparkcep.extensions"
# namespaces of Siddhi's standard extensions and of CEP 4.0's own: never a plug-in's
STANDARD_NAMESPACES = frozenset(
    {
        "str",
        "math",
        "regex",
        "time",
        "map",
        "reorder",
        "timeseries",
        "kf",
        "markov",
        "geo",
        "pmml",
        "eval",
        "script",
        "window",
    }
)

log = logging.getLogger("cep.plugins")


@dataclass
class Plugin:
    """One entry point of the group: what it registered, or why it was refused."""

    entry_point: str  # name = value
    distribution: str  # "name version", or "" when unknown
    location: str  # the folder the distribution is installed in ("" when unknown)
    namespace: str = ""
    names: Tuple[str, ...] = ()  # "kind name" of each registered entry
    error: str = ""


AGGREGATORS: Dict[Tuple[str, str], AggregatorEntry] = plugin_hook.AGGREGATORS  # type: ignore
WINDOWS: Dict[Tuple[str, str], WindowEntry] = plugin_hook.WINDOWS  # type: ignore
_PLUGINS: List[Plugin] = []
_lock = threading.RLock()
_loaded = False


class _ClassWindow(WindowEntry):
    """A plug-in window: its class is at hand, not named by module path."""

    def processor_class(self):
        return self.implementation


def plugins(reload: bool = False) -> List[Plugin]:
    """Every entry point of the group, loaded (once; again with `reload`)."""
    global _loaded
    with _lock:
        if reload:
            _forget()
        if not _loaded:
            _loaded = True
            for ep in metadata.entry_points(group=GROUP):
                _PLUGINS.append(_load(ep))
        return list(_PLUGINS)


def ensure_loaded(namespace: Optional[str]) -> None:
    """Load the plug-ins when a plan names a namespace no standard extension owns."""
    if namespace and namespace not in STANDARD_NAMESPACES and not _loaded:
        plugins()


def lookup_aggregator(namespace: str, name: str) -> Optional[AggregatorEntry]:
    ensure_loaded(namespace)
    return AGGREGATORS.get((namespace, name))


def lookup_window(namespace: str, name: str) -> Optional[WindowEntry]:
    ensure_loaded(namespace)
    return WINDOWS.get((namespace, name))


def locations() -> List[str]:
    """The folders the loaded plug-ins' distributions are installed in."""
    return sorted({p.location for p in plugins() if p.location and not p.error})


def distributions() -> List[str]:
    """The distribution names of the loaded plug-ins."""
    return sorted({p.distribution.split()[0] for p in plugins() if p.distribution and not p.error})


def _forget():
    global _loaded
    for p in _PLUGINS:
        for key in [k for k, e in ext_processors.FUNCTIONS.items() if k[0] == p.namespace]:
            del ext_processors.FUNCTIONS[key]
        for key in [
            k
            for k, e in ext_processors.STREAM_PROCESSORS.items()
            if e.origin != "siddhi" and k[0] == p.namespace
        ]:
            del ext_processors.STREAM_PROCESSORS[key]
    AGGREGATORS.clear()
    WINDOWS.clear()
    _PLUGINS.clear()
    _loaded = False


def _load(ep) -> Plugin:
    dist = getattr(ep, "dist", None)
    label = f"{dist.metadata['Name']} {dist.version}" if dist is not None else ""
    where = ""
    if dist is not None:
        try:
            where = str(dist.locate_file(""))
        except Exception:  # noqa: BLE001 (a distribution without files)
            where = ""
    plugin = Plugin(f"{ep.name} = {ep.value}", label, where)
    try:
        extension = ep.load()
        if callable(extension) and not hasattr(extension, "namespace"):
            extension = extension()
    except Exception as exc:  # a broken plug-in must not break the compiler
        plugin.error = f"cannot load {ep.value}: {type(exc).__name__}: {exc}"
        log.error("plug-in %s refused: %s", plugin.entry_point, plugin.error)
        return plugin
    from cep.plugin import Extension

    if not isinstance(extension, Extension):
        plugin.error = f"{ep.value} is a {type(extension).__name__}, not a cep.plugin.Extension"
    elif not extension.namespace.isidentifier():
        plugin.error = f"namespace {extension.namespace!r} is not a name"
    elif extension.namespace in STANDARD_NAMESPACES:
        plugin.error = f"namespace '{extension.namespace}' belongs to Siddhi's standard extensions"
    elif any(p.namespace == extension.namespace and not p.error for p in _PLUGINS):
        plugin.error = f"namespace '{extension.namespace}' is taken by another plug-in"
    if plugin.error:
        log.error("plug-in %s refused: %s", plugin.entry_point, plugin.error)
        return plugin
    plugin.namespace = extension.namespace
    plugin.names = _register(extension, label or ep.value)
    return plugin


def _register(ext, origin) -> Tuple[str, ...]:
    ns, names = ext.namespace, []
    for name, spec in ext.functions.items():
        ext_processors.FUNCTIONS[(ns, name)] = _function_entry(ns, name, spec)
        names.append(f"function {ns}:{name}")
    for name, spec in ext.aggregators.items():
        AGGREGATORS[(ns, name)] = _aggregator_entry(ns, name, spec)
        names.append(f"aggregator {ns}:{name}")
    for name, spec in ext.windows.items():
        WINDOWS[(ns, name)] = _ClassWindow(name, spec["params"], spec["cls"], spec["doc"])
        names.append(f"window #window.{ns}:{name}")
    for name, cls in ext.stream_processors.items():
        ext_processors.STREAM_PROCESSORS[(ns, name)] = ext_processors.StreamProcessorEntry(
            ns, name, f"{cls.__module__}:{cls.__qualname__}", cls.__doc__ or "", origin
        )
        names.append(f"stream processor #{ns}:{name}")
    return tuple(names)


def _function_entry(ns, name, spec) -> FunctionEntry:
    key = f"_plugin_{ns}_{name}"
    fn = spec["fn"]

    def emit(sources, types, args):
        return f"{key}({', '.join(sources)})", {key: fn}

    return FunctionEntry(
        name, spec["min"], spec["max"], spec["rule"], emit, spec["doc"], pure=spec["pure"]
    )


def _aggregator_entry(ns, name, spec) -> AggregatorEntry:
    """An Aggregator class as the selector's slot snippets: slot 0 is a dict holding the
    group's instance under key 0 (made on the first event)."""
    key = f"_plugin_agg_{ns}_{name}"
    AGG_GLOBALS[key] = spec["cls"]

    def add(S, v, removes):
        return [f"_pa = {S(0)}", f"if not _pa: _pa[0] = {key}()", f"_pa[0].add({v})"]

    return AggregatorEntry(
        name,
        1,
        1,
        1,
        spec["rule"],
        lambda t, removes: [{}],
        add,
        lambda S, v: [f"if {S(0)}: {S(0)}[0].remove({v})"],
        lambda S, t: f"({S(0)}[0].value() if {S(0)} else None)",
        lambda S: [f"{S(0)}.clear()"],
        spec["doc"],
    )


plugin_hook.install(ensure_loaded)  # catalog lookups of unknown namespaces load plug-ins
