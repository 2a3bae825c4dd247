"""Annotations: `@name(key='value', 'value')`, `@Plan:name('X')`, nested annotations."""

from dataclasses import dataclass, field
from typing import Iterable, Optional

from cep.model.span import Span, NO_SPAN


@dataclass(frozen=True)
class Annotation:
    """`@ns:name(...)`. `name` keeps the user's spelling; compare with `matches()`.

    `elements` are (key or None, value string) pairs in source order; `annotations` are nested
    annotations (Siddhi 4's `@sink(type='x', @map(type='json'))`)."""

    name: str
    namespace: Optional[str] = None
    elements: tuple[tuple[Optional[str], str], ...] = ()
    annotations: tuple["Annotation", ...] = ()
    span: Span = field(default=NO_SPAN, compare=False)

    def matches(self, name: str, namespace: Optional[str] = None) -> bool:
        """Case-insensitive match on name and (when given) namespace."""
        if self.name.lower() != name.lower():
            return False
        return namespace is None or (self.namespace or "").lower() == namespace.lower()

    def get(self, key: str, default: Optional[str] = None) -> Optional[str]:
        """The value of `key` (case-insensitive), else `default`."""
        for k, v in self.elements:
            if k is not None and k.lower() == key.lower():
                return v
        return default

    @property
    def value(self) -> Optional[str]:
        """The first positional (keyless) value, else the first value, else None."""
        for k, v in self.elements:
            if k is None:
                return v
        return self.elements[0][1] if self.elements else None


def find_annotation(
    annotations: Iterable[Annotation], name: str, namespace: Optional[str] = None
) -> Optional[Annotation]:
    """The first annotation named `name` (and `namespace`, when given), else None."""
    for a in annotations:
        if a.matches(name, namespace):
            return a
    return None
