"""Windows: `#window.name(params)` processors, built through `build_window`."""
from cep.engine.windows.base import WINDOWS, WindowEnv, WindowProcessor, build_window  # noqa: F401
from cep.engine.windows import sliding, batch, keyed  # noqa: F401  (they register themselves)
