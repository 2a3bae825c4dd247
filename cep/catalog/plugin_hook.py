"""Where the catalog meets plug-ins without importing them.

Lookups of a namespace no standard extension owns call `ensure_loaded(namespace)`; the
plug-in loader (cep.catalog.plugins, which imports the plug-ins' engine classes) installs
itself here when it is imported, which the compiler does. Plug-in aggregators and windows
are kept in the tables below; functions and stream processors in cep.catalog.ext_processors.
So the catalog never imports engine code, and the engine never imports the plug-in loader.
"""

from typing import Callable, Dict, Optional, Tuple

AGGREGATORS: Dict[Tuple[str, str], object] = {}  # (namespace, name) -> AggregatorEntry
WINDOWS: Dict[Tuple[str, str], object] = {}  # (namespace, name) -> WindowEntry
_loader: Optional[Callable[[str], None]] = None


def install(loader: Callable[[str], None]) -> None:
    """Set the function that loads the plug-ins owning a namespace."""
    global _loader
    _loader = loader


def ensure_loaded(namespace: Optional[str]) -> None:
    """Load the plug-ins once a namespace is asked for (no-op before a loader is installed)."""
    if namespace and _loader is not None:
        _loader(namespace)
