"""Script functions at run time: `[JavaScript]` bodies run in an embedded V8 (mini-racer) with
no host access (no require, process, network or file API: a bare V8 context) and a time and
a heap cap per call; `[python]` bodies run as host code, only when the operator enabled them.

A call that throws, runs past its time cap or grows the heap past its cap raises
`EventFailure`: the stream junction drops that one event for the query, logs it and counts it
(`ExecutionPlanRuntime.failed_events()`); the next events go on. After a heap cap breach
the function's V8 context is made anew, so the next call starts clean (a timed-out call is
terminated by V8 and leaves the context usable)."""

import atexit
import logging
import textwrap
import threading
import weakref
from dataclasses import dataclass
from typing import Any, Dict

from cep.catalog import scripts as catalog_scripts
from cep.errors import EventFailure, InvalidQueryError
from cep.model import AttrType

log = logging.getLogger("cep.scripts")


@dataclass
class ScriptLimits:
    """Caps of one script call and whether [python] functions may run (host settings)."""

    timeout_ms: float = 1000.0
    memory_bytes: int = 64 * 1024 * 1024
    python: bool = False


LIMITS = ScriptLimits()


def configure(timeout_ms: float = None, memory_bytes: int = None, python: bool = None) -> None:
    """Set the process's script limits (the worker and manager call this from settings)."""
    if timeout_ms is not None:
        LIMITS.timeout_ms = float(timeout_ms)
    if memory_bytes is not None:
        LIMITS.memory_bytes = int(memory_bytes)
    if python is not None:
        LIMITS.python = bool(python)


_LIVE = weakref.WeakSet()


@atexit.register
def _close_all():
    """V8 contexts left open keep the interpreter from exiting: close them."""
    for fn in list(_LIVE):
        fn.close()


def _convert(value: Any, attr_type: AttrType, name: str):
    """A script's return value as the declared type (null stays null)."""
    if value is None:
        return None
    try:
        if attr_type is AttrType.STRING:
            return value if isinstance(value, str) else str(value)
        if attr_type is AttrType.BOOL:
            if isinstance(value, bool):
                return value
            raise TypeError(f"{type(value).__name__}")
        if attr_type in (AttrType.INT, AttrType.LONG):
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TypeError(type(value).__name__)
            return int(value)
        if attr_type in (AttrType.DOUBLE, AttrType.FLOAT):
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TypeError(type(value).__name__)
            return float(value)
    except (TypeError, ValueError, OverflowError) as exc:
        raise EventFailure(
            f"script function {name}() returned {value!r}, which is not {attr_type.value} ({exc})"
        ) from None
    return value


def _plain(value):
    """An argument as JSON can carry it to the script."""
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


class JavaScriptFunction:
    """One `[JavaScript]` function: its own V8 context, called with `data` = the arguments."""

    def __init__(self, definition, limits: ScriptLimits = None):
        self.definition, self.limits = definition, limits or LIMITS
        self.name = definition.id
        self._lock = threading.Lock()
        self._ctx = None
        self._source = f"function __cep_script(data) {{{definition.body}\n}}"
        self._open()  # a syntax error shows when the plan is built
        _LIVE.add(self)

    def _open(self):
        from py_mini_racer import MiniRacer
        from py_mini_racer import JSEvalException

        ctx = MiniRacer()
        try:
            ctx.eval(self._source, timeout=self.limits.timeout_ms)
        except JSEvalException as exc:
            ctx.close()
            raise InvalidQueryError(
                f"function '{self.name}': the JavaScript body does not compile: {_first_line(exc)}",
                self.definition.span,
            ) from None
        self._ctx = ctx

    def __call__(self, *args):
        from py_mini_racer import JSEvalException, JSOOMException, JSTimeoutException

        with self._lock:
            try:
                value = self._ctx.call(
                    "__cep_script",
                    [_plain(a) for a in args],
                    timeout=self.limits.timeout_ms,
                    max_memory=self.limits.memory_bytes,
                )
            except (JSTimeoutException, JSOOMException) as exc:
                what = (
                    f"ran longer than its cap of {self.limits.timeout_ms:g} ms"
                    if isinstance(exc, JSTimeoutException)
                    else f"grew the heap past its cap of "
                    f"{self.limits.memory_bytes // (1024 * 1024)} MiB"
                )
                if isinstance(exc, JSOOMException):
                    self._reopen()  # a heap at its cap: start the next call clean
                raise EventFailure(f"script function {self.name}() {what}") from None
            except JSEvalException as exc:
                raise EventFailure(
                    f"script function {self.name}() threw: {_first_line(exc)}"
                ) from None
        return _convert(_from_js(value), self.definition.return_type, self.name)

    def _reopen(self):
        old, self._ctx = self._ctx, None
        try:
            old.close()
        finally:
            self._open()

    def close(self):
        with self._lock:
            if self._ctx is not None:
                self._ctx.close()
                self._ctx = None


def _from_js(value):
    """JS values mini-racer hands back as objects (arrays, objects, undefined) as text."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if type(value).__name__ == "JSUndefinedType":
        return None
    return str(value)


def _first_line(exc) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


class PythonFunction:
    """One `[python]` function: the body is a Python function body over `data`."""

    def __init__(self, definition):
        self.definition, self.name = definition, definition.id
        body = textwrap.indent(textwrap.dedent(definition.body).strip("\n") or "pass", "    ")
        source = f"def __cep_script(data):\n{body}\n"
        scope: Dict[str, Any] = {}
        try:
            exec(compile(source, f"<function {self.name}>", "exec"), scope)  # noqa: S102
        except SyntaxError as exc:
            raise InvalidQueryError(
                f"function '{self.name}': the python body does not "
                f"compile: {exc.msg} (body line {(exc.lineno or 2) - 1})",
                definition.span,
            ) from None
        self._fn = scope["__cep_script"]

    def __call__(self, *args):
        try:
            value = self._fn(list(args))
        except Exception as exc:  # a failing script fails its event, never the engine
            raise EventFailure(
                f"script function {self.name}() raised {type(exc).__name__}: {exc}"
            ) from None
        return _convert(value, self.definition.return_type, self.name)

    def close(self):
        pass


def build_functions(plan, limits: ScriptLimits = None) -> Dict[str, Any]:
    """name -> FunctionEntry with its implementation, for every script function of `plan`."""
    limits = limits or LIMITS
    table = {}
    for d in plan.functions:
        language = d.language.lower()
        if language == catalog_scripts.PYTHON:
            if not limits.python:
                raise InvalidQueryError(
                    f"function '{d.id}': [python] script functions run host code and are "
                    f"off; an operator may enable them for trusted, single-tenant setups "
                    f"(setting scripts.python in conf/worker.yaml and conf/manager.yaml)",
                    d.language_span,
                )
            impl = PythonFunction(d)
        elif language == catalog_scripts.JAVASCRIPT:
            impl = JavaScriptFunction(d, limits)
        else:
            catalog_scripts.check_definitions([d])  # raises the positioned refusal
            continue
        table[d.id] = catalog_scripts.entry(d, impl)
    return table


def close_functions(table) -> None:
    for entry in table.values():
        impl = entry.emit([], [], ())[1]
        for fn in impl.values():
            if fn is not None:
                fn.close()
