"""Attribute types of SiddhiQL."""

from enum import Enum


class AttrType(str, Enum):
    """A Siddhi attribute type; the value is its SiddhiQL spelling."""

    STRING = "string"
    INT = "int"
    LONG = "long"
    FLOAT = "float"
    DOUBLE = "double"
    BOOL = "bool"
    OBJECT = "object"

    def __str__(self) -> str:
        return self.value


TYPES = {t.value: t for t in AttrType}
NUMERIC_TYPES = (AttrType.INT, AttrType.LONG, AttrType.FLOAT, AttrType.DOUBLE)
