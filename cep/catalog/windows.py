"""Built-in windows: one entry per window with its parameters (types, constness) and its
implementation, the engine's window processor class.

The compiler checks `#window.name(...)` against `params`; the engine builds the processor
from `implementation` ("module:Class", imported when a plan first uses the window, so that
checking a plan does not load the engine)."""

from dataclasses import dataclass
from importlib import import_module

from cep.catalog import plugin_hook
from cep.catalog.rules import ANY, DOUBLE, INT, LONG, STRING, lookup as _lookup

_TIME = (INT, LONG)


@dataclass(frozen=True)
class Param:
    """A window parameter: accepted types; `constant` when it must be a literal, `attribute`
    when it must be an attribute of the input."""

    name: str
    types: tuple
    constant: bool = True
    attribute: bool = False
    optional: bool = False
    repeat: bool = False


@dataclass(frozen=True)
class WindowEntry:
    name: str
    params: tuple  # of Param; optional ones last, a `repeat` one last of all
    implementation: str  # "module:Class" of the engine's WindowProcessor
    doc: str = ""

    def processor_class(self):
        """The engine's WindowProcessor class of this window."""
        module, cls = self.implementation.split(":")
        return getattr(import_module(module), cls)


def _w(name, impl, *params, doc=""):
    return WindowEntry(name, params, f"cep.engine.windows.{impl}", doc)


WINDOWS = {
    e.name: e
    for e in (
        _w("length", "sliding:LengthWindow", Param("window.length", (INT,))),
        _w("lengthBatch", "batch:LengthBatchWindow", Param("window.length", (INT,))),
        _w("time", "sliding:TimeWindow", Param("window.time", _TIME)),
        _w(
            "timeBatch",
            "batch:TimeBatchWindow",
            Param("window.time", _TIME),
            Param("start.time", _TIME, optional=True),
        ),
        _w(
            "externalTime",
            "sliding:ExternalTimeWindow",
            Param("timestamp", (LONG,), False, True),
            Param("window.time", _TIME),
        ),
        _w(
            "externalTimeBatch",
            "batch:ExternalTimeBatchWindow",
            Param("timestamp", (LONG,), False, True),
            Param("window.time", _TIME),
            Param("start.time", _TIME, False, optional=True),
            Param("timeout", _TIME, optional=True),
        ),
        _w(
            "timeLength",
            "sliding:TimeLengthWindow",
            Param("window.time", _TIME),
            Param("window.length", (INT,)),
        ),
        _w(
            "sort",
            "keyed:SortWindow",
            Param("window.length", (INT,)),
            Param("attribute", ANY, False, repeat=True),
        ),
        _w("unique", "keyed:UniqueWindow", Param("attribute", ANY, False, True)),
        _w("firstUnique", "keyed:FirstUniqueWindow", Param("attribute", ANY, False, True)),
        _w(
            "uniqueExternalTimeBatch",
            "batch:UniqueExternalTimeBatchWindow",
            Param("attribute", ANY, False, True),
            Param("timestamp", (LONG,), False, True),
            Param("window.time", _TIME),
            Param("start.time", _TIME, False, optional=True),
            Param("timeout", _TIME, optional=True),
        ),
        _w(
            "frequent",
            "keyed:FrequentWindow",
            Param("event.count", (INT,)),
            Param("attribute", ANY, False, True, repeat=True),
        ),
        _w(
            "lossyFrequent",
            "keyed:LossyFrequentWindow",
            Param("support.threshold", (DOUBLE,)),
            Param("error.bound", (DOUBLE,), optional=True),
            Param("attribute", ANY, False, True, repeat=True),
        ),
        _w("delay", "sliding:DelayWindow", Param("window.delay", _TIME)),
        _w("cron", "batch:CronWindow", Param("cron.expression", (STRING,))),
    )
}


def lookup(name, namespace=None):
    """The entry of `name`: case-sensitive past the first letter; a namespaced name is a
    plug-in's (cep.catalog.plugin_hook)."""
    if namespace:
        plugin_hook.ensure_loaded(namespace)
        return plugin_hook.WINDOWS.get((namespace, name))
    return _lookup(WINDOWS, name, namespace)
