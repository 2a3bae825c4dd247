"""Per-task plan rewrite for keyed backtests: split a partition into one partition per query.

Inside a task the events come sorted by (key, timestamp), so each key's whole run goes through
the engine back to back. A partition whose queries only read the partition's input streams
(no query reads what another inserts, no `#inner` streams) gives the same events per key and
stream when each query has a partition of its own, and a partition of patterns alone takes
the engine's fast keyed-pattern path (cep/engine/partition/keyed.py) instead of cloning the
whole query chain per key. Anything else is left as written.

`kernel_queries` finds the queries a keyed numpy kernel runs over the whole task at once, and
`without_queries` the plan the engine still runs (the task then feeds it only the streams it
reads)."""

import dataclasses

from cep.backtest.planner import _read_streams
from cep.model.expressions import Variable
from cep.model.queries import InsertInto, Partition, Query


def split_partitions(plan):
    """`plan` with each splittable partition replaced by one partition per query."""
    elements = []
    for element in plan.elements:
        if isinstance(element, Partition) and _splittable(element):
            elements += [dataclasses.replace(element, queries=(q,)) for q in element.queries]
        else:
            elements.append(element)
    return dataclasses.replace(plan, elements=tuple(elements))


def _splittable(partition):
    if len(partition.queries) < 2 or partition.inner_streams:
        return False
    targets = set()
    for q in partition.queries:
        out = q.output
        if not isinstance(out, InsertInto) or out.inner:
            return False
        targets.add(out.target)
    read = {sid for q in partition.queries for sid, inner in _read_streams(q.input)}
    inner = any(inner for q in partition.queries for _, inner in _read_streams(q.input))
    return not inner and not (read & targets)


def kernel_queries(plan, input_streams, exported):
    """[(query, KeyedKernel)] of the queries a keyed kernel (cep/engine/columnar/keyed) can
    run: those inserting into an exported stream no other query reads, on an input stream.
    Empty when the kernels package is missing."""
    try:
        from cep.engine.columnar.keyed import keyed_kernel
    except ImportError:
        return []
    definitions = {s.id: s for s in plan.streams}
    read = {sid for q in _queries(plan) for sid, _ in _read_streams(q.input)}
    found = []
    for query, keys in _queries_with_keys(plan):
        out = query.output
        if (
            not isinstance(out, InsertInto)
            or out.inner
            or out.target not in exported
            or out.target in read
        ):
            continue
        kernel = keyed_kernel(query, definitions, keys)
        if kernel is not None and kernel.input_stream in input_streams:
            found.append((query, kernel))
    return found


def without_queries(plan, taken):
    """(`plan` without the queries `taken` (by identity), the streams its queries read);
    None instead of the plan when no query is left."""
    ids = {id(q) for q in taken}
    elements = []
    for element in plan.elements:
        if isinstance(element, Partition):
            kept = tuple(q for q in element.queries if id(q) not in ids)
            if kept:
                elements.append(dataclasses.replace(element, queries=kept))
        elif id(element) not in ids:
            elements.append(element)
    rest = dataclasses.replace(plan, elements=tuple(elements))
    queries = list(_queries(rest))
    if not queries:
        return None, set()
    return rest, {sid for q in queries for sid, _ in _read_streams(q.input)}


def _queries(plan):
    return (q for q, _ in _queries_with_keys(plan))


def _queries_with_keys(plan):
    """(query, {stream id: partition key attribute}) of every query ({} outside partitions)."""
    for element in plan.elements:
        if isinstance(element, Partition):
            keys = {
                k.stream_id: k.expression.name
                for k in element.keys
                if isinstance(getattr(k, "expression", None), Variable)
            }
            for q in element.queries:
                yield q, keys
        elif isinstance(element, Query):
            yield element, {}
