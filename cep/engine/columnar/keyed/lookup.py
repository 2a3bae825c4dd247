"""The keyed kernel of one query of a plan, for the kernel tests and benchmarks: which query
(by its index among the plan's queries, partitions unfolded) and its partition keys."""

from cep.engine.columnar.keyed import keyed_kernel
from cep.model import Partition


def plan_query(plan, index=0):
    """(query, {stream id: partition key attribute}) of the index-th query of the plan."""
    found = []
    for el in plan.elements:
        if isinstance(el, Partition):
            keys = {k.stream_id: k.expression.name for k in el.keys}
            found += [(q, keys) for q in el.queries]
        else:
            found.append((el, {}))
    return found[index]


def kernel_for(plan, index=0):
    """The keyed kernel of the index-th query (None when no kernel takes it)."""
    query, keys = plan_query(plan, index)
    return keyed_kernel(query, {s.id: s for s in plan.streams}, keys)
