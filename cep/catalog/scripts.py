"""Script functions (`define function f[lang] return type { body }`): the languages, the
checks of a definition, and the table that makes a plan's functions callable as `f(args)`
while the plan is typed (compiler) or built (engine).

The table is a context variable, set around the compiler's checks and the engine's build of
one plan, so plans never see each other's functions."""

from contextlib import contextmanager
from contextvars import ContextVar
from typing import Callable, Dict, Optional

from cep.catalog import aggregators, functions, rules
from cep.catalog.functions import FunctionEntry
from cep.errors import DuplicateDefinitionError, InvalidQueryError

# language (lower case) -> how a plan may use it
JAVASCRIPT = "javascript"
PYTHON = "python"
REFUSED = {
    "scala": "[Scala] script functions need a JVM, which this engine does not embed; write "
    "the function in [JavaScript]",
    "r": "[R] script functions need an R runtime, which this engine does not embed; write the "
    "function in [JavaScript]",
}

_TABLE: ContextVar[Dict[str, FunctionEntry]] = ContextVar("cep_script_functions", default={})


def check_definitions(definitions) -> Dict[str, FunctionEntry]:
    """Check a plan's function definitions (positioned errors) -> name -> FunctionEntry
    for typing (no implementation)."""
    table = {}
    for d in definitions:
        language = d.language.lower()
        if language in REFUSED:
            raise InvalidQueryError(f"function '{d.id}': {REFUSED[language]}", d.language_span)
        if language not in (JAVASCRIPT, PYTHON):
            raise InvalidQueryError(
                f"function '{d.id}': unknown script language "
                f"[{d.language}] (known: JavaScript, python)",
                d.language_span,
            )
        if d.id in table:
            raise DuplicateDefinitionError(f"function '{d.id}' is defined twice", d.span)
        if (
            rules.lookup(functions.FUNCTIONS, d.id) is not None
            or aggregators.lookup(d.id) is not None
        ):
            raise DuplicateDefinitionError(
                f"function '{d.id}' has the name of a built-in "
                f"function or aggregator; choose another name",
                d.span,
            )
        table[d.id] = entry(d, None)
    return table


def entry(definition, implementation: Optional[Callable]) -> FunctionEntry:
    """The FunctionEntry of a script function; `implementation` is called with the call's
    argument values (None while the plan is only typed)."""
    name = f"_script_{definition.id}"

    def emit(sources, types, args):
        return f"{name}({', '.join(sources)})", {name: implementation}

    return FunctionEntry(
        definition.id,
        0,
        None,
        rules.returns(definition.return_type),
        emit,
        f"script function [{definition.language}]",
        pure=False,
    )


@contextmanager
def in_scope(table: Dict[str, FunctionEntry]):
    """Make `table`'s functions callable by name while the block runs."""
    token = _TABLE.set(table)
    try:
        yield
    finally:
        _TABLE.reset(token)


def lookup(name: str) -> Optional[FunctionEntry]:
    """The script function `name` of the plan being checked or built, else None."""
    return _TABLE.get().get(name)


__all__ = ["check_definitions", "entry", "in_scope", "lookup"]
