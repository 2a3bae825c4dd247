"""The Storm-style topology model: spouts, bolts, streams, groupings, parallelism.

    t = Topology("WordCount[-1234]")
    t.add_spout("sentences", "topology.testing:SentenceSpout", outputs={"default": ["sentence"]})
    t.add_bolt("split", SplitBolt, inputs={"sentences": "shuffle"}, parallelism=2,
               outputs={"default": ["word"]})
    t.add_bolt("count", CountBolt, inputs={"split": Grouping.by_fields("word")}, parallelism=2)
    t.validate()

Component classes are given as classes or import paths ("package.module:Class"); Spark
executors import them by path, so they must live in an importable module.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from topology.exceptions import (
    BadNameError,
    BadParallelismError,
    ComponentClassError,
    DanglingInputError,
    DuplicateComponentError,
    UnknownFieldError,
    UnknownStreamError,
)

# re-exported: the model's vocabulary (streams, groupings) lives in topology/grouping.py
from topology.grouping import (  # noqa: F401
    ALL,
    DEFAULT_STREAM,
    FIELDS,
    GLOBAL,
    GROUPINGS,
    SHUFFLE,
    Grouping,
)

# what add_spout/add_bolt accept: field names of the default stream, or stream id -> field names
OutputsSpec: TypeAlias = "Sequence[str] | Mapping[str, Sequence[str]]"
# source id or (source, stream) -> grouping (a Grouping, a kind, field names or a dict); or Inputs
InputsSpec: TypeAlias = "Mapping[Any, Any] | Input | Sequence[Input]"


@dataclass(frozen=True)
class Input:
    """A bolt's subscription: (source component, stream) with a grouping."""

    source: str
    stream: str
    grouping: Grouping

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "stream": self.stream, "grouping": self.grouping.to_dict()}


@dataclass
class ComponentSpec:
    """A spout or bolt: id, class, parallelism, declared output streams, inputs, config."""

    id: str
    kind: str
    class_path: str
    parallelism: int
    outputs: dict[str, tuple[str, ...]]
    inputs: list[Input] = field(default_factory=list)
    config: dict[str, Any] = field(default_factory=dict)
    cls: Any = None

    def load_class(self) -> Any:
        """The component class (imported from class_path when not given as a class)."""
        if self.cls is None:
            self.cls = import_class(self.class_path, self.id)
        return self.cls

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "class": self.class_path,
            "parallelism": self.parallelism,
            "outputs": {s: list(f) for s, f in self.outputs.items()},
            "inputs": [i.to_dict() for i in self.inputs],
            "config": self.config,
        }


def class_path_of(cls: type | str, component: str) -> str:
    """'module:QualName' for a class, or the string itself."""
    if isinstance(cls, str):
        if not cls.strip():
            raise ComponentClassError(f"component {component!r}: empty class path", component, cls)
        return cls
    if not isinstance(cls, type):
        raise ComponentClassError(
            f"component {component!r}: {cls!r} is not a class or an import path", component, cls
        )
    return f"{cls.__module__}:{cls.__qualname__}"


def import_class(path: str, component: str | None = None) -> Any:
    """Import 'package.module:Class' (or 'package.module.Class')."""
    module_name, _, attr = path.partition(":") if ":" in path else path.rpartition(".")
    try:
        obj = importlib.import_module(module_name)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError, ValueError) as exc:
        raise ComponentClassError(
            f"component {component!r}: cannot import class {path!r}: {exc}", component, path
        ) from None
    return obj


def _check_name(value: object, what: str) -> None:
    if not isinstance(value, str) or not value.strip():
        raise BadNameError(f"{what} must be a non-empty string, got {value!r}", None, value)


def _parallelism(value: object, component: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise BadParallelismError(
            f"component {component!r}: parallelism must be an integer >= 1, got {value!r}",
            component,
            value,
        )
    return value


def _outputs(outputs: OutputsSpec | None, component: str) -> dict[str, tuple[str, ...]]:
    if outputs is None:
        return {}
    if isinstance(outputs, (list, tuple)):
        outputs = {DEFAULT_STREAM: outputs}
    if not isinstance(outputs, dict):
        raise UnknownStreamError(
            f"component {component!r}: outputs must map stream ids to field lists, got {outputs!r}",
            component,
            outputs,
        )
    result = {}
    for stream, fields in outputs.items():
        _check_name(stream, f"component {component!r}: stream id")
        if isinstance(fields, str) or not all(isinstance(f, str) and f for f in fields):
            raise UnknownFieldError(
                f"component {component!r}: stream {stream!r} fields must be "
                f"a list of names, got {fields!r}",
                component,
                fields,
            )
        result[stream] = tuple(fields)
    return result


def _inputs(inputs: InputsSpec, component: str) -> list[Input]:
    if isinstance(inputs, Input):
        inputs = [inputs]
    if isinstance(inputs, dict):
        items = []
        for source, grouping in inputs.items():
            src, stream = source if isinstance(source, tuple) else (source, DEFAULT_STREAM)
            items.append(Input(src, stream, Grouping.parse(grouping, component)))
        return items
    if isinstance(inputs, (list, tuple)) and all(isinstance(i, Input) for i in inputs):
        return list(inputs)
    raise DanglingInputError(
        f"bolt {component!r}: inputs must map source ids (or (source, "
        f"stream) pairs) to groupings, got {inputs!r}",
        component,
        inputs,
    )


class Topology:
    """A named graph of spouts and bolts; build it, then ``validate()``."""

    def __init__(self, name: str, config: Mapping[str, Any] | None = None) -> None:
        _check_name(name, "topology name")
        self.name = name
        self.config: dict[str, Any] = dict(config or {})
        self.components: dict[str, ComponentSpec] = {}

    def add_spout(
        self,
        id: str,
        cls: type | str,
        parallelism: int = 1,
        outputs: OutputsSpec | None = None,
        config: Mapping[str, Any] | None = None,
    ) -> ComponentSpec:
        """Declare a spout; ``outputs`` maps stream id -> field names (a list = default)."""
        return self._add(
            ComponentSpec(
                id,
                "spout",
                class_path_of(cls, id),
                _parallelism(parallelism, id),
                _outputs(outputs, id),
                [],
                dict(config or {}),
                None if isinstance(cls, str) else cls,
            )
        )

    def add_bolt(
        self,
        id: str,
        cls: type | str,
        inputs: InputsSpec,
        parallelism: int = 1,
        outputs: OutputsSpec | None = None,
        config: Mapping[str, Any] | None = None,
    ) -> ComponentSpec:
        """Declare a bolt; ``inputs`` maps source id or (source, stream) -> grouping."""
        return self._add(
            ComponentSpec(
                id,
                "bolt",
                class_path_of(cls, id),
                _parallelism(parallelism, id),
                _outputs(outputs, id),
                _inputs(inputs, id),
                dict(config or {}),
                None if isinstance(cls, str) else cls,
            )
        )

    def _add(self, spec: ComponentSpec) -> ComponentSpec:
        _check_name(spec.id, "component id")
        if spec.id in self.components:
            raise DuplicateComponentError(
                f"component id {spec.id!r} is already declared "
                f"(as a {self.components[spec.id].kind})",
                spec.id,
                spec.id,
            )
        self.components[spec.id] = spec
        return spec

    @property
    def spouts(self) -> list[ComponentSpec]:
        return [c for c in self.components.values() if c.kind == "spout"]

    @property
    def bolts(self) -> list[ComponentSpec]:
        return [c for c in self.components.values() if c.kind == "bolt"]

    def validate(self, check_classes: bool = True, for_spark: bool = False) -> "Topology":
        """Reject a bad graph; each error names the component and the bad value.

        ``for_spark`` also rejects classes Spark executors cannot import by path.
        """
        from topology.validation import validate_topology

        validate_topology(self, check_classes, for_spark)
        return self

    def tasks(self) -> list[tuple[str, int]]:
        """Every instance as (component id, index), in task-id order (spouts last)."""
        ordered = self.bolts + self.spouts
        return [(c.id, i) for c in ordered for i in range(c.parallelism)]

    def task_ids(self) -> dict[str, list[int]]:
        """{component id: [task ids]}."""
        out: dict[str, list[int]] = {}
        for task, (cid, _) in enumerate(self.tasks()):
            out.setdefault(cid, []).append(task)
        return out

    @property
    def total_parallelism(self) -> int:
        return sum(c.parallelism for c in self.components.values())

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "config": self.config,
            "components": [c.to_dict() for c in self.components.values()],
        }

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), **kwargs)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Topology":
        """Rebuild a topology from ``to_dict()`` output."""
        topo = cls(data["name"], data.get("config"))
        for c in data["components"]:
            if c["kind"] == "spout":
                topo.add_spout(c["id"], c["class"], c["parallelism"], c["outputs"], c.get("config"))
            else:
                inputs = [
                    Input(i["source"], i["stream"], Grouping.parse(i["grouping"], c["id"]))
                    for i in c["inputs"]
                ]
                topo.add_bolt(
                    c["id"], c["class"], inputs, c["parallelism"], c["outputs"], c.get("config")
                )
        return topo

    @classmethod
    def from_json(cls, text: str) -> "Topology":
        return cls.from_dict(json.loads(text))

    def to_mermaid(self) -> str:
        from topology.draw import to_mermaid

        return to_mermaid(self)

    def __repr__(self) -> str:
        return f"Topology({self.name!r}, {len(self.components)} components)"
