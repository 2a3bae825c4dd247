"""What the query model reads and writes: streams, tables and definition strings."""

import dataclasses

from cep.model import (
    DeleteFrom,
    InsertInto,
    InTable,
    Partition,
    Query,
    SingleInputStream,
    UpdateOrInsert,
    UpdateTable,
    Window,
    find_annotation,
)

OUTPUTS = (InsertInto, DeleteFrom, UpdateTable, UpdateOrInsert)


def walk(node):
    """Every dataclass node under `node` (itself included), depth first."""
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, (tuple, list)):
            stack.extend(reversed(n))
        elif dataclasses.is_dataclass(n) and not isinstance(n, type):
            yield n
            stack.extend(
                reversed(
                    [
                        getattr(n, f.name)
                        for f in dataclasses.fields(n)
                        if f.name not in ("span", "annotations")
                    ]
                )
            )


def queries_of(element):
    """The queries of a Query (itself) or a Partition (its queries)."""
    return element.queries if isinstance(element, Partition) else (element,)


def read_ids(element):
    """Ids of the non-inner streams and tables the element reads, in first-seen order."""
    seen = {}
    for q in queries_of(element):
        for n in walk(q.input):
            if isinstance(n, SingleInputStream) and not n.inner:
                seen.setdefault(n.stream_id)
        for n in walk((q.selector, q.output, q.input)):
            if isinstance(n, InTable):
                seen.setdefault(n.table)
    return list(seen)


def written_ids(element):
    """Ids of the non-inner streams and tables the element writes (insert/delete/update)."""
    seen = {}
    for q in queries_of(element):
        out = q.output
        if isinstance(out, OUTPUTS) and not getattr(out, "inner", False):
            seen.setdefault(out.target)
    return list(seen)


def is_stateful(query):
    """Windows, joins and patterns hold state across events (CEP 4.0's parallel=1 rule)."""
    if not isinstance(query.input, SingleInputStream):
        return True
    return any(isinstance(h, Window) for h in query.input.handlers)


def definition_string(definition, keyword="stream"):
    """CEP 4.0's form: `define stream Id ( a type, b type );` (spaces inside the parentheses)."""
    attrs = ", ".join(f"{a.name} {a.type}" for a in definition.attributes)
    return f"define {keyword} {definition.id} ( {attrs} );"


def table_text(table):
    """The table's source text (annotations kept), else a generated definition; ends with `;`."""
    text = (table.text or "").strip().rstrip(";").strip()
    return (text + ";") if text else definition_string(table, "table")


def element_text(element):
    """The element's source text, trimmed and ended with `;`."""
    text = (element.text or "").strip().rstrip(";").rstrip()
    if not text:
        raise ValueError(f"{type(element).__name__} has no source text")
    return text + ";"


def cep_stream(definition, annotation):
    """The `@Import`/`@Export('name:version')` value of a definition, or None."""
    a = find_annotation(definition.annotations, annotation)
    return a.value if a is not None else None


def is_query(element):
    return isinstance(element, Query)
