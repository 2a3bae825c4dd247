"""What an aggregator entry is (built-in, extension or plug-in), and the globals its code
snippets call: a module of its own so that the extension aggregators (cep.catalog.ext) and
the plug-ins build entries without importing the built-in table that looks them up."""

import math
from collections import deque
from dataclasses import dataclass
from typing import Callable, Optional


@dataclass(frozen=True)
class AggregatorEntry:
    name: str
    min_args: int
    max_args: Optional[int]
    nargs: int  # arguments the implementation reads (count() reads none)
    rule: Callable  # (arg types, call) -> AttrType
    init: Callable  # (arg_type, removes) -> list of initial slot values
    add: Callable  # (S, v, removes) -> list of statement lines
    remove: Callable  # (S, v) -> lines
    value: Callable  # (S, arg_type) -> expression source
    reset: Callable  # (S) -> lines
    doc: str = ""


def _jsqrt(x):
    """Java's Math.sqrt: NaN for a negative argument (math.sqrt raises)."""
    return math.sqrt(x) if x >= 0.0 else math.nan


AGG_GLOBALS = {"deque": deque, "_jsqrt": _jsqrt}  # what the snippets call
