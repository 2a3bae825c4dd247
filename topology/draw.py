"""Draw a topology for the console: Mermaid flowchart text (and a dict for JSON)."""

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from topology.grouping import DEFAULT_STREAM, FIELDS

if TYPE_CHECKING:
    from topology.model import Topology


def _node_id(cid: str) -> str:
    return "c_" + re.sub(r"[^A-Za-z0-9_]", "_", cid)


def _label(text: object) -> str:
    return str(text).replace('"', "#quot;")


def to_mermaid(topology: "Topology", metrics: Mapping[str, Mapping[str, Any]] | None = None) -> str:
    """A Mermaid ``flowchart LR``: spouts as stadiums, bolts as boxes, edges with groupings.

    With ``metrics`` (as from TopologyHandle.metrics()), nodes show executed/emitted counts
    and capacity.
    """
    lines = ["flowchart LR"]
    for spec in topology.components.values():
        text = f"{spec.id} x{spec.parallelism}"
        stats = (metrics or {}).get(spec.id)
        if stats:
            count = stats["emitted"] if spec.kind == "spout" else stats["executed"]
            text += f"<br/>{count} events, capacity {stats['capacity']:.2f}"
        shape = '(["{}"])' if spec.kind == "spout" else '["{}"]'
        lines.append(f"    {_node_id(spec.id)}{shape.format(_label(text))}")
    for spec in topology.bolts:
        for inp in spec.inputs:
            label = inp.grouping.kind
            if inp.grouping.kind == FIELDS:
                label += "(" + ", ".join(inp.grouping.fields) + ")"
            if inp.stream != DEFAULT_STREAM:
                label = f"{inp.stream}: {label}"
            lines.append(f'    {_node_id(inp.source)} -->|"{_label(label)}"| {_node_id(spec.id)}')
    return "\n".join(lines) + "\n"
