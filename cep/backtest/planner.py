"""Keyed or single-task: can the plan's events be split by a partition key across Spark tasks?

Keyed when every query sits inside a `partition with (attr of S, ...)` whose streams all come
from the inputs, each input stream has at most one key attribute, and every query outside a
partition is stateless (a filter/projection: no window, join, pattern, aggregation, table or
rate limit). Otherwise the whole plan runs in one task and `reason` names the query that
forces it (a `Plan` may still have several partitions keyed on the same attributes)."""

import dataclasses
from dataclasses import dataclass, field

from cep.catalog.aggregators import is_aggregator
from cep.model.expressions import FunctionCall, InTable, Variable
from cep.model.inputs import SingleInputStream
from cep.model.queries import Partition, Query, RangePartitionKey


@dataclass
class ExecutionMode:
    """`keys`: input stream id -> key attribute (keyed mode); `reason` when single-task."""

    keyed: bool
    keys: dict = field(default_factory=dict)
    reason: str = ""


def plan_mode(plan, input_streams):
    """The ExecutionMode of `plan` fed by `input_streams` (ids)."""
    tables = {t.id for t in plan.tables}
    if plan.triggers:
        return ExecutionMode(
            False, reason=f"trigger '{plan.triggers[0].id}' fires on the whole plan's clock"
        )
    keys = {}
    for index, element in enumerate(plan.elements):
        if isinstance(element, Partition):
            problem = _partition_problem(element, index, input_streams, tables, keys)
        else:
            problem = _outside_problem(element, index, tables)
        if problem:
            return ExecutionMode(False, reason=problem)
    return ExecutionMode(True, keys=keys)


def query_label(query, index):
    name = query.name
    text = " ".join((query.text or "").split())
    shown = text if len(text) <= 80 else text[:77] + "..."
    return f"query '{name}'" if name else f"query {index + 1} ({shown})"


def _partition_problem(partition, index, input_streams, tables, keys):
    for key in partition.keys:
        if isinstance(key, RangePartitionKey):
            return f"partition {index + 1} is a range partition (of {key.stream_id})"
        if not isinstance(key.expression, Variable):
            return f"partition {index + 1} keys {key.stream_id} by an expression, not an attribute"
        if key.stream_id not in input_streams:
            return (
                f"partition {index + 1} is keyed on stream {key.stream_id}, which no input "
                "feeds (it is derived inside the plan)"
            )
        attr = key.expression.name
        if keys.setdefault(key.stream_id, attr) != attr:
            return f"stream {key.stream_id} is partitioned by both {keys[key.stream_id]} and {attr}"
    keyed = {k.stream_id for k in partition.keys}
    for q in partition.queries:
        for sid, inner in _read_streams(q.input):
            if not inner and sid not in keyed and _stateful(q, tables):
                return (
                    f"{query_label(q, index)} inside partition {index + 1} reads "
                    f"{sid}, which the partition does not key"
                )
        if _uses_table(q, tables):
            return f"{query_label(q, index)} uses a table (shared by every key)"
    return None


def _outside_problem(query, index, tables):
    if _stateful(query, tables):
        return f"{query_label(query, index)} is stateful and not inside a partition"
    return None


def _stateful(query, tables):
    if not isinstance(query, Query):
        return True
    inp = query.input
    if not isinstance(inp, SingleInputStream) or inp.window is not None:
        return True
    if query.rate is not None or query.selector.group_by or _uses_table(query, tables):
        return True
    return any(
        isinstance(n, FunctionCall) and not n.namespace and is_aggregator(n.name)
        for n in _walk(query.selector)
    )


def _uses_table(query, tables):
    if getattr(query.output, "target", None) in tables:
        return True
    if any(sid in tables for sid, _ in _read_streams(query.input)):
        return True
    return any(isinstance(n, InTable) for n in _walk(query))


def _read_streams(inp):
    """(stream id, inner) of every SingleInputStream under an input."""
    return [(n.stream_id, n.inner) for n in _walk(inp) if isinstance(n, SingleInputStream)]


def _walk(node):
    """Every dataclass node under `node` (itself included)."""
    stack = [node]
    while stack:
        n = stack.pop()
        if dataclasses.is_dataclass(n) and not isinstance(n, type):
            yield n
            stack.extend(getattr(n, f.name) for f in dataclasses.fields(n) if f.compare)
        elif isinstance(n, (tuple, list)):
            stack.extend(n)
