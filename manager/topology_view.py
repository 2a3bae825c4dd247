"""A plan's topology as a graph for the console (`GET .../topology`): components with their
role and parallelism, edges with stream, grouping and the parallelism of the receiving end,
from the same Topology the manager submits (manager/topology_builder.py)."""

from manager.queryplan.builder import PUBLISHER_NAME, RECEIVER_NAME
from manager.topology_builder import TICK_STREAM, build_topology


def _role(spec):
    if spec.id == RECEIVER_NAME:
        return "receiver"
    if spec.id == PUBLISHER_NAME:
        return "publisher"
    return "siddhi"


def _component(spec):
    role = _role(spec)
    streams = [s for s in spec.outputs if s != TICK_STREAM]
    if role == "publisher":
        streams = sorted({i.stream for i in spec.inputs})
    return {
        "id": spec.id,
        "kind": spec.kind,
        "role": role,
        "parallelism": spec.parallelism,
        "group": spec.id if role == "siddhi" else None,
        "streams": streams,
    }


def _edge(spec, inp):
    fields = [f for f in inp.grouping.fields]
    return {
        "from": inp.source,
        "to": spec.id,
        "stream": inp.stream,
        "grouping": inp.grouping.kind,
        "fields": fields,
        "parallelism": spec.parallelism,
        "internal": inp.stream == TICK_STREAM,
    }


def graph(topology):
    """{"topology", "components", "edges"} of a built Topology."""
    specs = list(topology.components.values())
    return {
        "topology": topology.name,
        "components": [_component(s) for s in specs],
        "edges": [_edge(s, i) for s in specs if s.kind == "bolt" for i in s.inputs],
    }


def plan_graph(tenant, compiled):
    """The graph of a compiled plan (nothing is submitted)."""
    topo = build_topology(
        compiled.xml,
        tenant,
        compiled.name,
        "tcp://unused:0",
        None,
        playback=compiled.model.playback,
    )
    return graph(topo)
