"""Partition keys and the `@purge` annotation.

Value keys (`attr of S`, or any expression) give one key per event; range keys (`price < 100
as 'low' or ... of S`) give every label whose condition the event meets (none: dropped)."""

import re

from cep.engine.expressions import SingleStreamScope, compile_expression, make_function
from cep.errors import AnnotationError, TypeMismatchError
from cep.model import AttrType, RangePartitionKey, find_annotation

_UNITS = {
    "ms": 1,
    "millisec": 1,
    "millisecond": 1,
    "milliseconds": 1,
    "sec": 1000,
    "second": 1000,
    "seconds": 1000,
    "min": 60_000,
    "minute": 60_000,
    "minutes": 60_000,
    "hour": 3_600_000,
    "hours": 3_600_000,
    "day": 86_400_000,
    "days": 86_400_000,
}


def compile_router_key(key, definition):
    """`route(batch) -> [(key, events)]` in first-appearance order of the keys."""
    scope = SingleStreamScope(definition)
    if isinstance(key, RangePartitionKey):
        return _range_router(key, scope)
    c = compile_expression(key.expression, scope)
    src = (
        "def route(batch):\n"
        "    groups = {}\n"
        "    for ev in batch:\n"
        "        r = ev[1]\n"
        f"        k = {c.source}\n"
        "        g = groups.get(k)\n"
        "        if g is None:\n"
        "            groups[k] = [ev]\n"
        "        else:\n"
        "            g.append(ev)\n"
        "    return groups.items()\n"
    )
    return make_function("route", src, c.globals)


def _range_router(key, scope):
    """One generated loop: each condition inline, appending the event to its label's group
    (an event meeting two conditions of one label is in that group twice, as the ranges
    say); the groups come out in first-appearance order of their labels."""
    labels, g, tests = [], {}, []
    for rc in key.ranges:
        c = compile_expression(rc.condition, scope)
        if c.type not in (AttrType.BOOL, AttrType.OBJECT):
            raise TypeMismatchError(
                f"range partition condition for '{rc.label}' must be a "
                f"bool expression, not {c.type}",
                rc.span,
            )
        if rc.label not in labels:
            labels.append(rc.label)
        g.update(c.globals)
        tests.append((labels.index(rc.label), c.source))
    lines = [
        "def route(batch):",
        *[f"    g{i} = []" for i in range(len(labels))],
        *[f"    f{i} = 0" for i in range(len(labels))],
        "    for i, ev in enumerate(batch):",
        "        r = ev[1]",
    ]
    for j, (i, source) in enumerate(tests):  # first appearance: event, then condition
        lines += [
            f"        if {source}:",
            f"            if not g{i}:",
            f"                f{i} = i * {len(tests)} + {j}",
            f"            g{i}.append(ev)",
        ]
    groups = ", ".join(f"(f{i}, {i}, g{i})" for i in range(len(labels)))
    lines += [
        f"    groups = sorted([{groups}])",
        "    return [(LABELS[n], grp) for _, n, grp in groups if grp]",
    ]
    return make_function("route", "\n".join(lines) + "\n", {**g, "LABELS": labels})


def parse_duration(text, where, span=None):
    """'1 min', '30 sec', '1 hour', '500' (ms) -> milliseconds."""
    m = re.fullmatch(r"\s*(\d+)\s*([a-zA-Z]*)\s*", str(text))
    if not m or (m.group(2) and m.group(2).lower() not in _UNITS):
        raise AnnotationError(
            f"{where}: '{text}' is not a duration (e.g. '10 sec', '1 hour')", span
        )
    return int(m.group(1)) * _UNITS.get(m.group(2).lower(), 1)


def purge_settings(partition):
    """(interval ms, idle period ms) from `@purge(enable='true', interval, idle.period)`, or
    None when purging is off."""
    ann = find_annotation(partition.annotations, "purge")
    if ann is None or str(ann.get("enable", "true")).lower() != "true":
        return None
    interval = ann.get("interval")
    idle = ann.get("idle.period")
    if interval is None or idle is None:
        raise AnnotationError(
            "@purge needs interval and idle.period (e.g. @purge(enable="
            "'true', interval='1 min', idle.period='1 hour'))",
            ann.span,
        )
    return (
        parse_duration(interval, "@purge interval", ann.span),
        parse_duration(idle, "@purge idle.period", ann.span),
    )
