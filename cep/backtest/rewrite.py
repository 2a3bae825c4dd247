"""Per-task plan rewrite for keyed backtests: split a partition into one partition per query.

Inside a task the events come sorted by (key, timestamp), so each key's whole run goes through
the engine back to back. A partition whose queries only read the partition's input streams
(no query reads what another inserts, no `#inner` streams) gives the same events per key and
stream when each query has a partition of its own, and a partition of patterns alone takes
the engine's fast keyed-pattern path (cep/engine/partition/keyed.py) instead of cloning the
whole query chain per key. Anything else is left as written."""
import dataclasses

from cep.backtest.planner import _read_streams
from cep.model.queries import InsertInto, Partition


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
