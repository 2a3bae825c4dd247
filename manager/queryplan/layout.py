"""The distributed layout of a plan: receiver streams, execution groups, publisher streams.

Streams that flow between groups are wired through; CEP 4.0's pruning (`removeUnusedStreams`)
drops a group's inputs it produces itself and outputs nobody else uses."""

from dataclasses import dataclass

from manager.exceptions import DistributionError
from manager.queryplan.groups import assign_groups, hold_parallelism, partition_keys, wire_streams
from manager.queryplan.streams import cep_stream


@dataclass
class Layout:
    """Everything the XML query plan holds, as Python values."""

    plan: object
    receiver_parallel: int
    imported: list  # stream ids
    groups: list  # of Group
    publisher_parallel: int
    exported: list  # stream ids


def _io_streams(plan, groups):
    """(imported, exported) ids: @Import/@Export, else the plan's open ends."""
    imported = [s.id for s in plan.streams if cep_stream(s, "Import")]
    exported = [s.id for s in plan.streams if cep_stream(s, "Export")]
    reads = {s for g in groups for s in g.inputs}
    writes = {s for g in groups for s in g.outputs}
    if not imported:
        imported = [s.id for s in plan.streams if s.id in reads and s.id not in writes]
    if not exported:
        exported = [s.id for s in plan.streams if s.id in writes and s.id not in reads]
    both = set(imported) & set(exported)
    if both:
        raise DistributionError(
            f"stream(s) {', '.join(sorted(both))} cannot be both imported and exported"
        )
    return imported, exported


def _prune(groups, imported, exported):
    """CEP 4.0's removeUnusedStreams, keeping inputs that someone else also produces."""
    raw_inputs = {g.name: list(g.inputs) for g in groups}
    for g in groups:
        others_out = {s for o in groups if o is not g for s in o.outputs} | set(imported)
        if len(g.inputs) > 1:
            g.inputs = [s for s in g.inputs if s not in g.outputs or s in others_out]
        if len(g.outputs) > 1:
            others_in = {s for o in groups if o is not g for s in raw_inputs[o.name]}
            g.outputs = [s for s in g.outputs if s in exported or s in others_in]


def _check_produced(groups, imported, exported):
    produced = set(imported) | {s for g in groups for s in g.outputs}
    for g in groups:
        for s in g.inputs:
            if s not in produced:
                raise DistributionError(
                    f"Siddhi bolt '{g.name}' consumes stream {s} not "
                    f"produced by any bolt/spout (import it with @Import)"
                )
    for s in exported:
        if s not in produced:
            raise DistributionError(
                f"Event publisher bolt(s) trying to consume stream {s} "
                f"not produced by any bolt/spout"
            )


def plan_layout(plan):
    """The checked layout of a compiled plan; DistributionError names what is wrong and where."""
    groups = assign_groups(plan)
    wire_streams(groups, plan)
    imported, exported = _io_streams(plan, groups)
    _prune(groups, imported, exported)
    for g in groups:
        hold_parallelism(g)
        partition_keys(g)
    _check_produced(groups, imported, exported)
    return Layout(
        plan,
        plan.plan_dist("receiverParallelism"),
        imported,
        groups,
        plan.plan_dist("publisherParallelism"),
        exported,
    )
