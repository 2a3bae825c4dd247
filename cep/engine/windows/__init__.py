"""Windows: `#window.name(params)` processors, built through `build_window`."""

from cep.engine.windows.base import WindowEnv, WindowProcessor, build_window  # noqa: F401
