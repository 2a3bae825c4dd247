"""Execution groups: which queries and partitions run together in one Siddhi bolt.

`@dist(parallel='N', execGroup='G')` on a query or partition; the group is named by execGroup,
else the element's name, else `group<index>`. Unlike CEP 4.0, windows, joins and patterns
inside a partition may run with parallel > 1 (fields grouping on the partition key); outside
partitions they are held to parallel 1 with a warning."""
import logging
import re
from dataclasses import dataclass, field

from cep.model import Partition, RangePartitionKey, Variable, find_annotation
from manager.exceptions import DistributionError
from manager.queryplan.streams import is_stateful, read_ids, written_ids

log = logging.getLogger("manager.topology_manager")


@dataclass
class Group:
    """One event-processor: its elements, parallelism and stream wiring."""
    name: str
    parallel: int
    elements: list = field(default_factory=list)
    enforce: bool = False
    inputs: list = field(default_factory=list)
    outputs: list = field(default_factory=list)
    definitions: list = field(default_factory=list)  # table/trigger ids it needs
    partition_attrs: dict = field(default_factory=dict)  # input stream -> key attribute


def _dist(element):
    """(parallel, execGroup) from the element's @dist, with CEP's defaults (0 means 1)."""
    dist = find_annotation(element.annotations, "dist")
    if dist is None:
        return 1, None
    raw = dist.get("parallel", "1")
    try:
        parallel = max(1, int(raw))
    except (TypeError, ValueError):
        raise DistributionError(f"@dist parallel must be an integer, got {raw!r}", dist.span) from None
    return parallel, dist.get("execGroup")


def _element_name(element):
    if isinstance(element, Partition):
        for key in ("info", "name"):
            a = find_annotation(element.annotations, key)
            if a is not None:
                return a.get("name") or a.value
        return None
    return element.name


def assign_groups(plan):
    """Groups in declaration order, with CEP 4.0's naming and consistency rules."""
    groups = {}
    for index, element in enumerate(plan.elements, 1):
        parallel, exec_group = _dist(element)
        name = exec_group or _element_name(element) or _generated(groups, index)
        if re.search(r"\s", name):
            raise DistributionError(f"Query name '{name}' is not valid, it must not contain "
                                    f"spaces", element.span)
        if isinstance(element, Partition):
            _check_partition(element)
            if name in groups:
                raise DistributionError(f"Query, Partition or execute group of same name has "
                                        f"been defined earlier: '{name}'", element.span)
        group = groups.setdefault(name, Group(name, parallel))
        if group.parallel != parallel:
            raise DistributionError(f"Parallelism for each query in a query group should be "
                                    f"same: group '{name}' has {group.parallel}, this element "
                                    f"{parallel}", element.span)
        group.elements.append(element)
    return list(groups.values())


def _generated(groups, index):
    name = f"group{index}"
    while name in groups:
        name += "_"
    return name


def _check_partition(partition):
    for q in partition.queries:
        if find_annotation(q.annotations, "dist") is not None:
            raise DistributionError("Queries inside a partition must not carry @dist; put "
                                    "@dist on the partition", q.span)
    for key in partition.keys:
        if isinstance(key, RangePartitionKey):
            raise DistributionError("Range partitioning is not supported in distributed "
                                    "deployment", key.span)
        if not isinstance(key.expression, Variable):
            raise DistributionError("Only Expressions of Type Variable are supported as "
                                    "partition keys in distributed deployment", key.span)


def hold_parallelism(group):
    """Stateful queries outside partitions run with parallel 1 (and enforceParallel)."""
    stateful = [e for e in group.elements if not isinstance(e, Partition) and is_stateful(e)]
    if not stateful:
        return
    group.enforce = True
    if group.parallel > 1:
        log.warning("Execution group '%s': window, join and pattern queries outside a partition "
                    "run with parallel 1 (requested %d); use a partition to scale them",
                    group.name, group.parallel)
        group.parallel = 1


def partition_keys(group):
    """Set `partition_attrs`; a stream keyed two ways, or a parallel partition reading an
    unkeyed stream, holds the group to parallel 1 with a warning."""
    attrs, conflict = {}, None
    for p in (e for e in group.elements if isinstance(e, Partition)):
        for key in p.keys:
            previous = attrs.setdefault(key.stream_id, key.expression.name)
            if previous != key.expression.name:
                conflict = f"stream {key.stream_id} is partitioned by {previous} and {key.expression.name}"
        for sid in read_ids(p):
            if sid not in attrs and sid in group.inputs and group.parallel > 1:
                conflict = conflict or f"partitioned queries read the unkeyed stream {sid}"
    if conflict and group.parallel > 1:
        log.warning("Execution group '%s' runs with parallel 1 (requested %d): %s",
                    group.name, group.parallel, conflict)
        group.parallel = 1
    group.partition_attrs = {s: a for s, a in attrs.items() if s in group.inputs}


def wire_streams(groups, plan):
    """Fill each group's raw inputs, outputs and needed definitions."""
    tables = {t.id for t in plan.tables}
    triggers = {t.id for t in plan.triggers}
    for g in groups:
        reads, writes = [], []
        for e in g.elements:
            reads += [s for s in read_ids(e) if s not in reads]
            writes += [s for s in written_ids(e) if s not in writes]
        g.inputs = [s for s in reads if s not in tables]
        g.outputs = [s for s in writes if s not in tables]
        used = reads + writes
        g.definitions = [t.id for t in plan.tables if t.id in used] + \
                        [t.id for t in plan.triggers if t.id in used]
        g.inputs = [s for s in g.inputs if s not in triggers]
