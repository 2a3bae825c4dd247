"""Execution groups: which queries and partitions run together in one Siddhi bolt.

`@dist(parallel='N', execGroup='G')` on a query or partition; the group is named by execGroup,
else the element's name, else `group<index>`. Unlike CEP 4.0, windows, joins and patterns
inside a partition may run with parallel > 1 (fields grouping on the partition key); outside
partitions they are held to parallel 1 with a warning.

A named window (`define window W`) is one instance shared by its readers and writers, so the
group that holds it holds every element that reads or writes it: an element without an
explicit execGroup joins the group of the window it touches; elements in different explicit
groups, or a window's group with parallel > 1, are refused with a positioned error."""

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
    windows: list = field(default_factory=list)  # ids of the named windows it holds
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
        raise DistributionError(
            f"@dist parallel must be an integer, got {raw!r}", dist.span
        ) from None
    return parallel, dist.get("execGroup")


def _element_name(element):
    if isinstance(element, Partition):
        for key in ("info", "name"):
            a = find_annotation(element.annotations, key)
            if a is not None:
                return a.get("name") or a.value
        return None
    return element.name


def _window_group(element, exec_group, touched, placed):
    """The group a window-touching element must join (or None): its windows' group."""
    homes = {placed[w] for w in touched if w in placed}
    if len(homes) > 1:
        raise DistributionError(
            f"named windows {', '.join(sorted(touched))} are held by "
            f"different execution groups ({', '.join(sorted(homes))}); an "
            f"element using them must run beside all of them",
            element.span,
        )
    home = next(iter(homes), None)
    if home is not None and exec_group is not None and exec_group != home:
        w = next(w for w in touched if placed.get(w) == home)
        raise DistributionError(
            f"named window '{w}' is held by execution group '{home}'; this "
            f"element reads or writes it but is in execGroup "
            f"'{exec_group}': put every query that uses '{w}' in one "
            f"execGroup",
            element.span,
        )
    return home


def assign_groups(plan):
    """Groups in declaration order, with CEP 4.0's naming and consistency rules; each named
    window lives in the group of the first element that uses it, with all its users."""
    groups, placed = {}, {}  # window id -> group name
    windows = {w.id for w in getattr(plan, "windows", ())}
    for index, element in enumerate(plan.elements, 1):
        parallel, exec_group = _dist(element)
        touched = [s for s in read_ids(element) + written_ids(element) if s in windows]
        home = _window_group(element, exec_group, touched, placed) if touched else None
        name = exec_group or home or _element_name(element) or _generated(groups, index)
        if re.search(r"\s", name):
            raise DistributionError(
                f"Query name '{name}' is not valid, it must not contain spaces", element.span
            )
        if isinstance(element, Partition):
            _check_partition(element)
            if name in groups:
                raise DistributionError(
                    f"Query, Partition or execute group of same name has "
                    f"been defined earlier: '{name}'",
                    element.span,
                )
        group = groups.setdefault(name, Group(name, parallel))
        if group.parallel != parallel:
            raise DistributionError(
                f"Parallelism for each query in a query group should be "
                f"same: group '{name}' has {group.parallel}, this element "
                f"{parallel}",
                element.span,
            )
        group.elements.append(element)
        for w in touched:
            placed.setdefault(w, name)
            if w not in group.windows:
                group.windows.append(w)
            if group.parallel > 1:
                raise DistributionError(
                    f"named window '{w}' is one instance shared by its "
                    f"readers: its execution group '{name}' must run with "
                    f"parallel 1, not {group.parallel}",
                    element.span,
                )
    return list(groups.values())


def _generated(groups, index):
    name = f"group{index}"
    while name in groups:
        name += "_"
    return name


def _check_partition(partition):
    for q in partition.queries:
        if find_annotation(q.annotations, "dist") is not None:
            raise DistributionError(
                "Queries inside a partition must not carry @dist; put @dist on the partition",
                q.span,
            )
    for key in partition.keys:
        if isinstance(key, RangePartitionKey):
            raise DistributionError(
                "Range partitioning is not supported in distributed deployment", key.span
            )
        if not isinstance(key.expression, Variable):
            raise DistributionError(
                "Only Expressions of Type Variable are supported as "
                "partition keys in distributed deployment",
                key.span,
            )


def hold_parallelism(group):
    """Stateful queries outside partitions run with parallel 1 (and enforceParallel)."""
    stateful = [e for e in group.elements if not isinstance(e, Partition) and is_stateful(e)]
    if not stateful:
        return
    group.enforce = True
    if group.parallel > 1:
        log.warning(
            "Execution group '%s': window, join and pattern queries outside a partition "
            "run with parallel 1 (requested %d); use a partition to scale them",
            group.name,
            group.parallel,
        )
        group.parallel = 1


def partition_keys(group):
    """Set `partition_attrs`; a stream keyed two ways, or a parallel partition reading an
    unkeyed stream, holds the group to parallel 1 with a warning."""
    attrs, conflict = {}, None
    for p in (e for e in group.elements if isinstance(e, Partition)):
        for key in p.keys:
            previous = attrs.setdefault(key.stream_id, key.expression.name)
            if previous != key.expression.name:
                conflict = (
                    f"stream {key.stream_id} is partitioned by {previous} and {key.expression.name}"
                )
        for sid in read_ids(p):
            if sid not in attrs and sid in group.inputs and group.parallel > 1:
                conflict = conflict or f"partitioned queries read the unkeyed stream {sid}"
    if conflict and group.parallel > 1:
        log.warning(
            "Execution group '%s' runs with parallel 1 (requested %d): %s",
            group.name,
            group.parallel,
            conflict,
        )
        group.parallel = 1
    group.partition_attrs = {s: a for s, a in attrs.items() if s in group.inputs}


def wire_streams(groups, plan):
    """Fill each group's raw inputs, outputs and needed definitions."""
    tables = {t.id for t in plan.tables} | {w.id for w in getattr(plan, "windows", ())}
    triggers = {t.id for t in plan.triggers}
    for g in groups:
        reads, writes = [], []
        for e in g.elements:
            reads += [s for s in read_ids(e) if s not in reads]
            writes += [s for s in written_ids(e) if s not in writes]
        g.inputs = [s for s in reads if s not in tables]
        g.outputs = [s for s in writes if s not in tables]
        used = reads + writes
        g.definitions = [t.id for t in plan.tables if t.id in used] + [
            t.id for t in plan.triggers if t.id in used
        ]
        g.inputs = [s for s in g.inputs if s not in triggers]
