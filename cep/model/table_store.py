"""Where a table's rows live: `@from(eventtable='rdbms', ...)` (Siddhi 3) or
`@store(type='rdbms', ...)` (Siddhi 4) on a `define table`, parsed into a StoreSpec.

No annotation: an in-memory table (StoreSpec is None). Any other table type, or an option the
backend does not know, is a positioned AnnotationError: a plan never silently runs against an
empty in-memory table it did not ask for. Credentials and connection URLs never appear in a
plan: it names a datasource the operator configured (conf/datasources.yaml)."""

import re
from dataclasses import dataclass
from typing import Optional

from cep.errors import AnnotationError
from cep.model.annotations import Annotation
from cep.model.definitions import TableDefinition
from cep.model.types import AttrType

CACHE_TYPES = ("basic", "lru", "lfu")
DEFAULT_CACHE_SIZE = 4096
DEFAULT_DATASOURCE = "default"

# options a backend accepts but this runtime does not need: Siddhi 3's bloom filters only save
# database round trips on misses, which the result cache does too
_IGNORED = {
    "bloom.filters",
    "bloom.filter.size",
    "bloom.filter.validity.interval",
    "bloom.filter.hash.functions",
    "cache.loading",
}
_KNOWN = {
    "eventtable",
    "type",
    "datasource.name",
    "datasource",
    "table.name",
    "cache",
    "cache.size",
    "cache.validity.period",
    "field.length",
} | _IGNORED
_PERIOD = re.compile(r"\s*(\d+)\s*(ms|millis\w*|milliseconds?|s|sec\w*|min\w*|hours?)?\s*\Z", re.I)
_CREDENTIALS = {"jdbc.url", "username", "password", "jdbc.driver.name", "url", "user"}
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_UNSUPPORTED = {
    "hazelcast": "Hazelcast event tables need a Hazelcast cluster, which this runtime does not "
    "run; use eventtable='rdbms' with a datasource, or no @from for an in-memory "
    "table",
    "solr": "Solr stores are not supported; use 'rdbms'",
    "mongodb": "MongoDB stores are not supported; use 'rdbms'",
    "hbase": "HBase stores are not supported; use 'rdbms'",
    "cassandra": "Cassandra stores are not supported; use 'rdbms'",
    "redis": "Redis stores are not supported; use 'rdbms'",
}


@dataclass(frozen=True)
class StoreSpec:
    """An external table: its datasource name, database table, cache and the annotation."""

    kind: str
    datasource: str
    table_name: str
    cache: Optional[str]  # None (no cache), 'basic' (FIFO), 'lru' or 'lfu'
    cache_size: int
    field_lengths: tuple[tuple[str, int], ...]  # (attribute, length) of string columns
    validity_ms: Optional[int]  # a cache entry is read again from the database after this
    annotation: Annotation


def store_spec(definition: TableDefinition) -> Optional[StoreSpec]:
    """The external store of a table definition, or None for an in-memory table; raises a
    positioned AnnotationError for an unknown type or option."""
    found = [
        a
        for a in definition.annotations
        if a.namespace is None and (a.matches("from") or a.matches("store"))
    ]
    if not found:
        return None
    if len(found) > 1:
        raise AnnotationError(
            f"table '{definition.id}' has both @{found[0].name} and @{found[1].name}: give one",
            found[1].span,
        )
    a = found[0]
    key = "eventtable" if a.matches("from") else "type"
    where = f"@{a.name} on table '{definition.id}'"
    kind = a.get(key)
    if kind is None:
        raise AnnotationError(f"{where} needs {key}='rdbms'", a.span)
    lowered = kind.strip().lower()
    if lowered in _UNSUPPORTED:
        raise AnnotationError(f"{where}: {key}='{kind}': {_UNSUPPORTED[lowered]}", a.span)
    if lowered != "rdbms":
        raise AnnotationError(
            f"{where}: unknown table type {key}='{kind}' (known: rdbms; no "
            f"annotation gives an in-memory table)",
            a.span,
        )
    options = {}
    for k, v in a.elements:
        if k is None:
            raise AnnotationError(f"{where}: '{v}' needs a key (key='value')", a.span)
        k = k.lower()
        if k in _CREDENTIALS:
            raise AnnotationError(
                f"{where}: '{k}' is not taken from a plan: connection URLs and "
                f"credentials belong in the operator's datasources file "
                f"(conf/datasources.yaml); name one with datasource.name",
                a.span,
            )
        if (
            k not in _KNOWN
            or (k == "eventtable" and key == "type")
            or (k == "type" and key == "eventtable")
        ):
            known = sorted(_KNOWN - _IGNORED - {"type" if key == "eventtable" else "eventtable"})
            raise AnnotationError(
                f"{where}: unknown option '{k}' (known: {', '.join(known)})", a.span
            )
        options[k] = v.strip()
    datasource = options.get("datasource.name") or options.get("datasource") or DEFAULT_DATASOURCE
    table_name = options.get("table.name") or definition.id
    if not _NAME.match(table_name):
        raise AnnotationError(
            f"{where}: table.name '{table_name}' is not a plain name (letters, digits, _)", a.span
        )
    cache = options.get("cache")
    if cache is not None:
        cache = cache.lower()
        if cache not in CACHE_TYPES:
            raise AnnotationError(
                f"{where}: cache='{options['cache']}' is not one of basic, LRU, LFU", a.span
            )
    size = DEFAULT_CACHE_SIZE
    if "cache.size" in options:
        try:
            size = int(options["cache.size"])
        except ValueError:
            size = 0
        if size <= 0:
            raise AnnotationError(
                f"{where}: cache.size='{options['cache.size']}' must be a positive whole number",
                a.span,
            )
        cache = cache or "basic"
    validity = None
    if "cache.validity.period" in options:
        validity = _period(options["cache.validity.period"])
        if validity is None or validity <= 0:
            raise AnnotationError(
                f"{where}: cache.validity.period="
                f"'{options['cache.validity.period']}' is not a time such as "
                f"'10 sec' or '500 ms'",
                a.span,
            )
        cache = cache or "basic"
    lengths = _field_lengths(options.get("field.length"), definition, where, a)
    for attr in definition.attributes:
        if attr.type == AttrType.OBJECT:
            raise AnnotationError(
                f"{where}: attribute '{attr.name}' is of type object, which "
                f"a database column cannot hold",
                a.span,
            )
    return StoreSpec(lowered, datasource, table_name, cache, size, lengths, validity, a)


def _period(text: str) -> Optional[int]:
    """Milliseconds of '10 sec', '500 ms', '2 min', '1 hour' or a plain number of ms."""
    m = _PERIOD.match(text)
    if not m:
        return None
    unit = (m.group(2) or "ms").lower()
    if unit == "ms" or unit.startswith("milli"):
        factor = 1
    elif unit.startswith("min"):
        factor = 60_000
    elif unit.startswith("hour"):
        factor = 3_600_000
    else:
        factor = 1000
    return int(m.group(1)) * factor


def _field_lengths(
    text: Optional[str], definition: TableDefinition, where: str, a: Annotation
) -> tuple[tuple[str, int], ...]:
    """`field.length='symbol:100, name:40'`: VARCHAR lengths of string columns."""
    if not text:
        return ()
    out = []
    for part in text.split(","):
        name, _, n = part.partition(":")
        name = name.strip()
        if definition.index_of(name) < 0 or not n.strip().isdigit():
            raise AnnotationError(
                f"{where}: field.length entry '{part.strip()}' is not "
                f"attribute:length of an attribute of the table",
                a.span,
            )
        out.append((name, int(n)))
    return tuple(out)
