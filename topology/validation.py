"""Graph checks for a Topology: spouts, inputs, streams, fields, cycles, classes."""

from typing import TYPE_CHECKING

from topology.exceptions import (
    ComponentClassError,
    CycleError,
    DanglingInputError,
    NoSpoutError,
    UnknownFieldError,
    UnknownStreamError,
)
from topology.grouping import FIELDS

if TYPE_CHECKING:
    from topology.model import ComponentSpec, Topology


def validate_topology(
    topology: "Topology", check_classes: bool = True, for_spark: bool = False
) -> None:
    """Raise the first problem found, naming the component and the bad value."""
    if not topology.spouts:
        raise NoSpoutError(f"topology {topology.name!r} has no spout", None, topology.name)
    for spec in topology.spouts:
        if not spec.outputs:
            raise UnknownStreamError(
                f"spout {spec.id!r} declares no output stream", spec.id, spec.outputs
            )
    for spec in topology.bolts:
        _check_inputs(topology, spec)
    _check_cycles(topology)
    if check_classes:
        for spec in topology.components.values():
            _check_class(spec, for_spark)


def _check_inputs(topology: "Topology", spec: "ComponentSpec") -> None:
    if not spec.inputs:
        raise DanglingInputError(f"bolt {spec.id!r} has no input", spec.id, spec.inputs)
    for inp in spec.inputs:
        source = topology.components.get(inp.source)
        if source is None:
            raise DanglingInputError(
                f"bolt {spec.id!r}: input from unknown component {inp.source!r}",
                spec.id,
                inp.source,
            )
        fields = source.outputs.get(inp.stream)
        if fields is None:
            raise UnknownStreamError(
                f"bolt {spec.id!r}: component {inp.source!r} declares no "
                f"stream {inp.stream!r} (it declares "
                f"{sorted(source.outputs)})",
                spec.id,
                inp.stream,
            )
        if inp.grouping.kind == FIELDS:
            missing = [f for f in inp.grouping.fields if f not in fields]
            if missing:
                raise UnknownFieldError(
                    f"bolt {spec.id!r}: fields grouping on {missing[0]!r}, "
                    f"but {inp.source}.{inp.stream} declares {list(fields)}",
                    spec.id,
                    missing[0],
                )


def _check_cycles(topology: "Topology") -> None:
    state: dict[str, str] = {}

    def visit(cid: str, path: list[str]) -> None:
        if state.get(cid) == "done":
            return
        if state.get(cid) == "open":
            loop = path[path.index(cid) :] + [cid]
            raise CycleError(f"bolt {cid!r} is in a cycle: {' -> '.join(loop)}", cid, loop)
        state[cid] = "open"
        for inp in topology.components[cid].inputs:
            visit(inp.source, path + [cid])
        state[cid] = "done"

    for cid in topology.components:
        visit(cid, [])


def _check_class(spec: "ComponentSpec", for_spark: bool) -> None:
    from topology.component import Bolt, Spout

    cls = spec.load_class()
    base = Spout if spec.kind == "spout" else Bolt
    if not (isinstance(cls, type) and issubclass(cls, base)):
        raise ComponentClassError(
            f"{spec.kind} {spec.id!r}: class {spec.class_path!r} is not a {base.__name__} subclass",
            spec.id,
            spec.class_path,
        )
    if for_spark and ("<locals>" in spec.class_path or spec.class_path.startswith("__main__:")):
        raise ComponentClassError(
            f"{spec.kind} {spec.id!r}: class {spec.class_path!r} cannot be "
            f"imported by Spark executors; define it at module level in an "
            f"importable module",
            spec.id,
            spec.class_path,
        )
