"""What a `@map(...)` says, as plain data: type, options, `@attributes(...)` and `@payload(...)`.

A MapSpec travels from the compiler's annotation model (`MapSpec.from_annotation`) through the
manager's deployment description (`to_dict` / `from_dict`, JSON) to the worker's sources and
sinks. Option keys are lower-cased; attribute and payload keys keep their spelling."""

from dataclasses import dataclass, field
from typing import Optional

from cep.model import find_annotation
from cep.model.types import AttrType, TYPES

PASS_THROUGH = "passthrough"


@dataclass(frozen=True)
class MapSpec:
    """`@map(type='json', k='v', @attributes(a='$.x'), @payload('...'))`.

    `attributes` and `payload` are (key or None, value) pairs in source order: keyed
    (`symbol='$.sym'`) or positional (`'$.sym'`, in the stream's attribute order)."""

    type: str = PASS_THROUGH
    options: dict = field(default_factory=dict)
    attributes: tuple = ()
    payload: tuple = ()

    @property
    def custom(self) -> bool:
        """True when the mapping names its own attributes or payload (not the default format)."""
        return bool(self.attributes or self.payload)

    def option(self, name: str, default=None):
        return self.options.get(name.lower(), default)

    def flag(self, name: str, default: bool) -> bool:
        value = self.options.get(name.lower())
        return default if value is None else str(value).strip().lower() == "true"

    @classmethod
    def from_annotation(cls, annotation) -> "MapSpec":
        """From a `@map(...)` annotation of the compiler's model (cep.model.Annotation)."""
        options = {k.lower(): v for k, v in annotation.elements if k is not None}
        kind = normalize_type(options.pop("type", PASS_THROUGH))
        attrs = find_annotation(annotation.annotations, "attributes")
        payload = find_annotation(annotation.annotations, "payload")
        return cls(
            kind,
            options,
            tuple(attrs.elements) if attrs else (),
            tuple(payload.elements) if payload else (),
        )

    @classmethod
    def from_dict(cls, d: Optional[dict]) -> "MapSpec":
        """From `to_dict()`'s form (None: pass-through)."""
        if not d:
            return cls()
        options = {str(k).lower(): v for k, v in (d.get("options") or {}).items()}
        kind = normalize_type(d.get("type") or options.pop("type", PASS_THROUGH))
        return cls(
            kind,
            options,
            tuple(tuple(p) for p in d.get("attributes") or ()),
            tuple(tuple(p) for p in d.get("payload") or ()),
        )

    def to_dict(self) -> dict:
        return {
            "type": self.type,
            "options": dict(self.options),
            "attributes": [list(p) for p in self.attributes],
            "payload": [list(p) for p in self.payload],
        }


def normalize_type(kind) -> str:
    """The lower-cased map type; `passThrough` and `pass-through` are one type."""
    return str(kind or PASS_THROUGH).strip().lower().replace("-", "").replace("_", "")


@dataclass(frozen=True)
class Schema:
    """The attribute names and types a mapper reads or writes (a stream definition's)."""

    id: str
    names: tuple
    types: tuple

    @classmethod
    def of(cls, definition) -> "Schema":
        """From a StreamDefinition, a Schema, or `(id, [(name, type), ...])`."""
        if isinstance(definition, Schema):
            return definition
        if isinstance(definition, tuple) and len(definition) == 2:
            sid, attrs = definition
            return cls(
                sid,
                tuple(n for n, _ in attrs),
                tuple(t if isinstance(t, AttrType) else TYPES[str(t).lower()] for _, t in attrs),
            )
        return cls(
            definition.id,
            tuple(a.name for a in definition.attributes),
            tuple(a.type for a in definition.attributes),
        )

    def index(self, name: str) -> int:
        try:
            return self.names.index(name)
        except ValueError:
            return -1
