"""Building blocks of extension entries: Siddhi's strict argument-type checks, the guard that
turns a Java exception inside a function into a null result (Siddhi 3.2's FunctionExecutor
logs the exception and returns null), Java's string forms, and Java regex helpers."""

import logging
import re
from typing import Callable, Optional, Sequence

from cep.catalog.functions import FunctionEntry
from cep.catalog.rules import fail
from cep.engine import javamath
from cep.model import AttrType, Constant

INT, LONG, FLOAT, DOUBLE = AttrType.INT, AttrType.LONG, AttrType.FLOAT, AttrType.DOUBLE
STRING, BOOL, OBJECT = AttrType.STRING, AttrType.BOOL, AttrType.OBJECT
NUMBERS = (INT, LONG, FLOAT, DOUBLE)
ANY = tuple(AttrType)
ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth")

log = logging.getLogger("cep.ext")
_failures = {"count": 0}


def ordinal(i: int) -> str:
    return ORDINALS[i] if i < len(ORDINALS) else f"{i + 1}th"


def check_types(full: str, call, types: Sequence[AttrType], allowed: Sequence[Sequence]):
    """Argument i's type is one of allowed[i] (Siddhi checks the executors' types strictly)."""
    for i, (t, ok) in enumerate(zip(types, allowed)):
        if ok is not None and t not in ok:
            need = " or ".join(x.value.upper() for x in ok)
            fail(
                call,
                f"invalid parameter type for the {ordinal(i)} argument of {full}(): "
                f"required {need}, but found {t.value.upper()}",
                i,
            )


def signature(full: str, result, *allowed):
    """A type rule: fixed allowed types per argument (a trailing `...` repeats the last) and
    the result type (or a callable of the argument types)."""

    def rule(types, call):
        spec = list(allowed)
        if spec and spec[-1] is Ellipsis:
            spec = spec[:-1] + [spec[-2]] * (len(types) - len(spec) + 1)
        check_types(full, call, types, spec)
        return result(types) if callable(result) else result

    return rule


def require_constant(full: str, call, index: int, what: str) -> None:
    if index < len(call.args) and not isinstance(call.args[index], Constant):
        fail(call, f"{full}(): the {what} ({ordinal(index)} argument) has to be a constant", index)


def guarded(full: str, fn: Callable) -> Callable:
    """`fn` with Siddhi's failure rule: an exception gives null, logged (the event goes on)."""

    def call(*args):
        try:
            return fn(*args)
        except Exception as exc:  # Java's ExecutionPlanRuntimeException and the like
            _failures["count"] += 1
            if _failures["count"] <= 20 or _failures["count"] % 10000 == 0:
                log.warning(
                    "%s() failed on %r: %s: %s (result is null; %d failures so far)",
                    full,
                    args,
                    type(exc).__name__,
                    exc,
                    _failures["count"],
                )
            return None

    call.__name__ = fn.__name__
    return call


def _as_condition(fn: Callable) -> Callable:
    def condition(*args):
        return fn(*args) is True

    return condition


def failures() -> int:
    """How many extension calls have failed (given null) in this process."""
    return _failures["count"]


def entry(
    ns: str,
    name: str,
    min_args: int,
    max_args: Optional[int],
    rule,
    impl,
    doc: str = "",
    pure: bool = True,
    factory: bool = False,
    unguarded: bool = False,
    boolean: bool = False,
) -> FunctionEntry:
    """A catalog entry of `ns:name`. `impl` is the Java-faithful implementation (raising where
    Java throws), or with `factory` a callable (types, args) -> implementation, so an entry can
    pick an overload by the argument types or precompile a constant argument. A `boolean`
    function's null (or failure) reads as false: Siddhi wraps an extension of result type
    BOOL in a BoolConditionExpressionExecutor."""
    full = f"{ns}:{name}"

    def emit(srcs, types, args):
        # one name per call site (its argument list, the same object for the safe and the
        # fast source): a factory makes each site its own implementation
        helper = f"_x_{ns}_{name}_{id(args):x}" if factory else f"_x_{ns}_{name}"
        fn = impl(types, args) if factory else impl
        fn = fn if unguarded else guarded(full, fn)
        if boolean:
            fn = _as_condition(fn)
        return f"{helper}({', '.join(srcs)})", {helper: fn}

    return FunctionEntry(name, min_args, max_args, rule, emit, doc, pure)


def to_java_string(value, attr_type: AttrType = None) -> str:
    """String.valueOf / StringBuilder.append of a value of the given static type."""
    if attr_type is FLOAT and isinstance(value, float):
        return javamath.java_float_str(value)
    if value is None:
        return "null"
    return javamath.java_str(value) if not hasattr(value, "java_str") else value.java_str()


def java_length(s: str) -> int:
    """String.length(): UTF-16 code units."""
    n = len(s)
    if s.isascii():
        return n
    return n + sum(1 for c in s if ord(c) > 0xFFFF)


# -- Java regular expressions --
_regex_cache = {}


def java_regex(pattern: str):
    """Pattern.compile for the syntax Java and Python share (the common case); cached."""
    compiled = _regex_cache.get(pattern)
    if compiled is None:
        py = (
            pattern.replace("\\p{Alpha}", "[A-Za-z]")
            .replace("\\p{Digit}", "[0-9]")
            .replace("\\p{Alnum}", "[A-Za-z0-9]")
            .replace("\\p{Upper}", "[A-Z]")
            .replace("\\p{Lower}", "[a-z]")
            .replace("\\p{Punct}", "[!-/:-@\\[-`{-~]")
            .replace("\\p{Space}", "\\s")
            .replace("\\Z", "(?=\\n?\\Z)")
            .replace("\\z", "\\Z")
        )
        compiled = re.compile(py)
        if len(_regex_cache) > 1000:
            _regex_cache.clear()
        _regex_cache[pattern] = compiled
    return compiled


def java_replacement(repl: str):
    """Matcher.appendReplacement's rules as a function of a match: `$n` and `${name}` insert a
    group, a backslash quotes the next character; an unknown group raises, as in Java."""
    parts = []
    i, literal = 0, []
    while i < len(repl):
        c = repl[i]
        if c == "\\":
            i += 1
            if i >= len(repl):
                raise ValueError("character to be escaped is missing")
            literal.append(repl[i])
            i += 1
        elif c == "$":
            i += 1
            if i >= len(repl):
                raise ValueError("Illegal group reference: group index is missing")
            if literal:
                parts.append("".join(literal))
                literal = []
            if repl[i] == "{":
                end = repl.index("}", i)
                parts.append((repl[i + 1 : end],))
                i = end + 1
            else:
                if not repl[i].isdigit():
                    raise ValueError("Illegal group reference")
                j = i + 1
                while j < len(repl) and repl[j].isdigit():
                    j += 1
                parts.append((repl[i:j],))
                i = j
        else:
            literal.append(c)
            i += 1
    if literal:
        parts.append("".join(literal))

    def expand(m):
        out = []
        for p in parts:
            if isinstance(p, str):
                out.append(p)
            else:
                ref = p[0]
                if ref.isdigit():  # Java takes as many digits as form a valid group number
                    n, k = int(ref[0]), 1
                    if n > m.re.groups:
                        raise IndexError(f"No group {ref[0]}")
                    while k < len(ref) and int(ref[: k + 1]) <= m.re.groups:
                        n, k = int(ref[: k + 1]), k + 1
                    out.append(m.group(n) or "")
                    out.append(ref[k:])
                else:
                    out.append(m.group(ref) or "")
        return "".join(out)

    return expand


def java_split(s: str, regex: str) -> list:
    """String.split(regex): trailing empty strings removed; a zero-width match at the start
    gives no leading empty string; groups are not included (unlike re.split)."""
    if len(regex) == 1 and regex not in ".$|()[{^?*+\\":
        if regex not in s:
            return [s]
        parts = s.split(regex)
    else:
        parts, start = [], 0
        for m in java_regex(regex).finditer(s):
            if m.end() == 0:  # a zero-width match at index 0
                continue
            parts.append(s[start : m.start()])
            start = m.end()
        if not parts:
            return [s]
        parts.append(s[start:])
    while parts and parts[-1] == "":
        parts.pop()
    return parts
