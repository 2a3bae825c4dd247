"""The argument and result types of a catalog entry, read from its type rule.

A catalog entry does not list its signature: its `rule(types, call)` accepts a list of
argument types (or raises TypeMismatchError) and gives the result type. So the signature is
found by asking the rule: every combination of the seven attribute types, at every arity the
entry takes (a variadic entry up to two arguments past its minimum), each argument an
attribute and, where the rule wants constants, constants of that type. What the rule accepts
is then folded into a few rows such as `(number, string) -> double` or `(T, T) -> T`."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Optional, Sequence

from cep.errors import SiddhiQLError
from cep.model import AttrType, Constant, FunctionCall, Variable

TYPES: tuple[AttrType, ...] = tuple(AttrType)
NUMBERS = frozenset({AttrType.INT, AttrType.LONG, AttrType.FLOAT, AttrType.DOUBLE})
VARIADIC_EXTRA = 2  # arities tried past the minimum of an entry without a maximum
BY_VALUE = "set by a constant"  # the result type depends on a constant argument's value
GENERIC = "T"

# sample constants, in the order tried: a type name (convert, cast), a time unit (time:),
# a number in range for every numeric parameter (math:percentile's 0 < p <= 100)
_STRING_SAMPLES = ("int", "long", "YEAR")
_SAMPLE = {
    AttrType.INT: 1,
    AttrType.LONG: 1,
    AttrType.FLOAT: 50.0,
    AttrType.DOUBLE: 50.0,
    AttrType.BOOL: True,
    AttrType.OBJECT: None,
}

Rule = Callable[[list[AttrType], FunctionCall], Any]


@dataclass(frozen=True)
class Row:
    """One folded signature: the types each argument accepts (`number`, `string|long`, `T`)
    and the result type (a type, `T` or BY_VALUE)."""

    args: tuple[str, ...]
    result: str
    generic: str = ""  # what T ranges over
    more: bool = False  # a variadic entry: more arguments like the last one may follow

    def __str__(self) -> str:
        """`(number, string) -> double`; `(T, T) -> T, T: number`."""
        args = ", ".join(self.args) + (", ..." if self.more else "")
        return f"({args}) -> {self.result}" + (f", T: {self.generic}" if self.generic else "")


def _calls(
    name: str, namespace: Optional[str], types: Sequence[AttrType]
) -> Iterable[FunctionCall]:
    """The same call with attributes, then with constants of each sample."""
    yield FunctionCall(name, tuple(Variable(f"a{i}") for i in range(len(types))), namespace)
    for text in _STRING_SAMPLES:
        yield FunctionCall(
            name,
            tuple(Constant(text if t is AttrType.STRING else _SAMPLE[t], t) for t in types),
            namespace,
        )


def _results(
    rule: Rule, name: str, namespace: Optional[str], types: Sequence[AttrType]
) -> set[AttrType]:
    """The results of the calls the rule accepts: attributes if it takes them, else
    constants of each sample."""
    out = set()
    for call in _calls(name, namespace, types):
        try:
            result = rule(list(types), call)
        except SiddhiQLError:
            continue
        out.add(AttrType(result))
        if not isinstance(call.args[0] if call.args else None, Constant):
            break  # attributes accepted (or no arguments): constants are too
    return out


def arities(min_args: int, max_args: Optional[int]) -> range:
    """The arities tried: every one an entry takes (a variadic one up to VARIADIC_EXTRA past
    its minimum)."""
    high = max_args if max_args is not None else min_args + VARIADIC_EXTRA
    return range(min_args, high + 1)


def probe(
    rule: Rule, name: str, namespace: Optional[str], min_args: int, max_args: Optional[int]
) -> dict[tuple[AttrType, ...], AttrType | str]:
    """Every accepted tuple of argument types and its result (BY_VALUE when constants of
    different values give different results)."""
    accepted: dict[tuple[AttrType, ...], AttrType | str] = {}
    for n in arities(min_args, max_args):
        for types in itertools.product(TYPES, repeat=n):
            results = _results(rule, name, namespace, types)
            if len(results) == 1:
                accepted[types] = results.pop()
            elif results:
                accepted[types] = BY_VALUE
    return accepted


def _merge(rows: list[list[frozenset[AttrType]]]) -> list[list[frozenset[AttrType]]]:
    """Merge rows that differ in one position (a union there) until none do: per position,
    rows alike everywhere else become one."""
    current = {tuple(r) for r in rows}
    changed = True
    while changed:
        changed = False
        for k in range(len(next(iter(current), ()))):
            groups: dict[tuple[frozenset[AttrType], ...], frozenset[AttrType]] = {}
            for row in current:
                rest = row[:k] + row[k + 1 :]
                groups[rest] = groups.get(rest, frozenset()) | row[k]
            merged = {rest[:k] + (union,) + rest[k:] for rest, union in groups.items()}
            if merged != current:
                current, changed = merged, True
    return sorted((list(r) for r in current), key=_order)


def _order(row: list[frozenset[AttrType]]) -> list[list[int]]:
    """Rows in SiddhiQL's type order (string, int, long, float, double, bool, object)."""
    return [sorted(TYPES.index(t) for t in s) for s in row]


def fold(
    accepted: dict[tuple[AttrType, ...], AttrType | str], min_args: int, max_args: Optional[int]
) -> list[Row]:
    """Fold the accepted tuples into rows, by arity and result. Results that recur among
    the argument types, the same way for several results (`maximum(T, T) -> T`), make one
    generic row."""
    rows: list[Row] = []
    top = max(arities(min_args, max_args))
    for n in arities(min_args, max_args):
        more = max_args is None and n == top
        by_result: dict[AttrType | str, list[list[frozenset[AttrType]]]] = {}
        for types, result in accepted.items():
            if len(types) == n:
                by_result.setdefault(result, []).append([frozenset({t}) for t in types])
        folded = {r: _merge(v) for r, v in by_result.items()}
        done: set[AttrType | str] = set()
        for whole_sets in (False, True):  # T for {result} only, then within sets too
            generic: dict[tuple[tuple[str, ...], ...], list[AttrType]] = {}
            for result, result_rows in folded.items():
                if isinstance(result, AttrType) and result not in done:
                    key = _generic_key(result_rows, result, whole_sets)
                    if key is not None:
                        generic.setdefault(key, []).append(result)
            for key, results in generic.items():
                if len(results) > 1:
                    done |= set(results)
                    rows += [Row(args, GENERIC, type_set(frozenset(results)), more) for args in key]
        for result, result_rows in folded.items():
            if result not in done:
                rows += [
                    Row(tuple(type_set(s) for s in row), str(result), more=more)
                    for row in result_rows
                ]
    return rows


def _generic_key(
    rows: list[list[frozenset[AttrType]]], result: AttrType, whole_sets: bool
) -> Optional[tuple[tuple[str, ...], ...]]:
    """The rows with `result` written as T (None when some row does not take it)."""

    def text(s: frozenset[AttrType]) -> str:
        return type_set(s, result if whole_sets or s == frozenset({result}) else None)

    keyed = [tuple(text(s) for s in row) for row in rows]
    if not all(GENERIC in "|".join(k).split("|") for k in keyed):
        return None
    return tuple(sorted(keyed))


def type_set(types: frozenset[AttrType], generic: Optional[AttrType] = None) -> str:
    """`any`, `number`, or the types joined by `|` in SiddhiQL's order; `generic` as T."""
    if generic is not None and generic in types:
        rest = types - {generic}
        return GENERIC if not rest else f"{GENERIC}|{type_set(rest)}"
    if types == frozenset(TYPES):
        return "any"
    if types == NUMBERS:
        return "number"
    return "|".join(t.value for t in TYPES if t in types)


def signatures(
    rule: Rule, name: str, namespace: Optional[str], min_args: int, max_args: Optional[int]
) -> list[str]:
    """The folded signatures of an entry, as text (empty: its rule accepts no call)."""
    accepted = probe(rule, name, namespace, min_args, max_args)
    return [str(r) for r in fold(accepted, min_args, max_args)]
