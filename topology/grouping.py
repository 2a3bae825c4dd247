"""The vocabulary of a topology's streams: the default stream's name and the groupings that
spread a stream's batches over a bolt's instances. The model, its validation, its drawing and
the components all speak it."""

from dataclasses import dataclass
from typing import Any

from topology.exceptions import BadGroupingError

DEFAULT_STREAM = "default"
SHUFFLE, FIELDS, ALL, GLOBAL = "shuffle", "fields", "all", "global"
GROUPINGS = (SHUFFLE, FIELDS, ALL, GLOBAL)


@dataclass(frozen=True)
class Grouping:
    """How a stream's batches are spread over a bolt's instances.

    :ivar shuffle: round-robin, one whole batch per instance in turn
    :ivar fields: rows with equal values of ``fields`` always reach the same instance
    :ivar all: every instance gets every batch
    :ivar global: instance 0 gets every batch
    """

    kind: str
    fields: tuple[str, ...] = ()

    @classmethod
    def shuffle(cls) -> "Grouping":
        return cls(SHUFFLE)

    @classmethod
    def by_fields(cls, *names: str) -> "Grouping":
        return cls(FIELDS, tuple(names))

    @classmethod
    def all(cls) -> "Grouping":
        return cls(ALL)

    @classmethod
    def global_(cls) -> "Grouping":
        return cls(GLOBAL)

    @classmethod
    def parse(cls, value: object, component: str | None) -> "Grouping":
        """Accept a Grouping, 'shuffle'/'all'/'global', a field list, or a dict."""
        if isinstance(value, Grouping):
            grouping = value
        elif isinstance(value, str) and value in (SHUFFLE, ALL, GLOBAL):
            grouping = cls(value)
        elif isinstance(value, (list, tuple)):
            grouping = cls(FIELDS, tuple(value))
        elif isinstance(value, dict) and "kind" in value:
            grouping = cls(value["kind"], tuple(value.get("fields", ())))
        else:
            raise BadGroupingError(
                f"bolt {component!r}: grouping {value!r} is not one of "
                f"{', '.join(GROUPINGS)} or a list of field names",
                component,
                value,
            )
        if grouping.kind not in GROUPINGS:
            raise BadGroupingError(
                f"bolt {component!r}: unknown grouping {grouping.kind!r}", component, grouping.kind
            )
        if (grouping.kind == FIELDS) != bool(grouping.fields):
            raise BadGroupingError(
                f"bolt {component!r}: fields grouping needs field names, "
                f"other groupings take none (got {grouping!r})",
                component,
                grouping.fields,
            )
        return grouping

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "fields": list(self.fields)}
