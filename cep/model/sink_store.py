"""The settings of `@sink(type='rdbms', ...)` on a stream, parsed and checked against the
stream's attributes: one parser for plan validation (`cep validate`, plan add, the console
editor: positioned errors at the annotation) and for the worker that builds the sink.

    @sink(type='rdbms', datasource='orders', table.name='Trades', mode='upsert',
          on.key='symbol', field.length='symbol:20')

Option names follow Siddhi 4's rdbms store (`datasource`, `table.name`, `field.length`) and
CEP 4.0's RDBMS publisher (`datasource.name`, `execution.mode`='insert'|'update',
`update.keys`; `primary.keys` is what `cep import` wrote before). A plan names a datasource
of the operator's conf/datasources.yaml, never a URL or a password."""

import re
from dataclasses import dataclass
from typing import Any, Mapping

from cep.model.definitions import StreamDefinition
from cep.model.types import AttrType

MODES = ("insert", "upsert")
DEFAULT_DATASOURCE = "default"
DEFAULT_MAX_PENDING = 100_000
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_MODE_ALIASES = {
    "insert": "insert",
    "upsert": "upsert",
    "update": "upsert",
    "update_or_insert": "upsert",
    "update-or-insert": "upsert",
}
_CREDENTIALS = ("jdbc.url", "username", "password", "jdbc.driver.name", "url", "user")


@dataclass(frozen=True)
class RdbmsSinkSpec:
    datasource: str
    table_name: str
    mode: str  # insert | upsert
    keys: tuple[
        str, ...
    ]  # attribute names: the conflict target of upsert, the primary key of a new table
    field_lengths: tuple[tuple[str, int], ...]  # (attribute, VARCHAR length) of string columns
    max_pending: int  # rows held while the database cannot be written, oldest dropped beyond
    retry_interval: float  # seconds between attempts to write held rows


def rdbms_sink_spec(options: Mapping[str, Any], definition: StreamDefinition) -> RdbmsSinkSpec:
    """The settings of an rdbms sink on `definition` (a StreamDefinition) from its options
    (lower-case names, without type/delivery/dedup); ValueError saying what is wrong."""
    opts = {str(k).lower(): ("" if v is None else str(v).strip()) for k, v in options.items()}
    for k in _CREDENTIALS:
        if k in opts:
            raise ValueError(
                f"'{k}' is not taken from a plan: connection URLs and credentials "
                f"belong in the operator's datasources file "
                f"(conf/datasources.yaml); name one with datasource='...'"
            )
    names = [a.name for a in definition.attributes]
    datasource = opts.get("datasource") or opts.get("datasource.name") or DEFAULT_DATASOURCE
    table = opts.get("table.name") or ""
    if not table:
        raise ValueError("needs table.name=...")
    if not _NAME.match(table):
        raise ValueError(f"table.name '{table}' is not a plain name (letters, digits, _)")
    raw_mode = opts.get("mode") or opts.get("execution.mode") or "insert"
    mode = _MODE_ALIASES.get(raw_mode.lower())
    if mode is None:
        raise ValueError(f"mode='{raw_mode}' is not one of {', '.join(MODES)}")
    raw_keys = opts.get("on.key") or opts.get("primary.keys") or opts.get("update.keys") or ""
    keys = tuple(k.strip() for k in raw_keys.split(",") if k.strip())
    for k in keys:
        if k not in names:
            raise ValueError(
                f"on.key names '{k}', which is not an attribute of stream "
                f"'{definition.id}' ({', '.join(names)})"
            )
    if len(set(keys)) != len(keys):
        raise ValueError(f"on.key='{raw_keys}' names an attribute twice")
    if mode == "upsert" and not keys:
        raise ValueError(
            "mode='upsert' needs on.key='attribute,...': the columns whose "
            "values identify a row to update"
        )
    lengths = []
    for part in filter(None, (p.strip() for p in opts.get("field.length", "").split(","))):
        name, _, n = part.partition(":")
        name, n = name.strip(), n.strip()
        if name not in names or not n.isdigit() or int(n) <= 0:
            raise ValueError(
                f"field.length entry '{part}' is not attribute:length of a "
                f"string attribute of stream '{definition.id}'"
            )
        lengths.append((name, int(n)))
    for attr in definition.attributes:
        if attr.type == AttrType.OBJECT:
            raise ValueError(
                f"attribute '{attr.name}' is of type object, which a database column cannot hold"
            )
    raw_pending = opts.get("max.pending") or str(DEFAULT_MAX_PENDING)
    if not raw_pending.isdigit() or int(raw_pending) <= 0:
        raise ValueError(f"max.pending='{raw_pending}' is not a positive whole number")
    raw_retry = opts.get("retry.interval") or "5"
    try:
        retry = float(raw_retry)
    except ValueError:
        retry = -1.0
    if not 0 < retry <= 3600:
        raise ValueError(f"retry.interval='{raw_retry}' is not a number of seconds in (0, 3600]")
    return RdbmsSinkSpec(datasource, table, mode, keys, tuple(lengths), int(raw_pending), retry)
