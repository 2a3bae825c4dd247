"""An in-memory event table: rows in insertion order, with an optional unique hash key.

`@IndexBy('k')` / `@PrimaryKey('k')` make `k` a unique key (last write wins) kept in a dict, so
a lookup on `T.k == expr` is O(1). Without a key, rows are a list and duplicates are kept; a
condition with `T.a == expr` (`a` and `expr` of one hashable type) then reads the rows of one
value from a hash index on `a` (SecondaryProbe), built on first use, kept up on inserts and
built again after a delete or update changed rows. The index only narrows the candidates: the
whole condition is still evaluated on each, so the result is the scan's.
Operations take compiled callables: `cond(t, r)` over a table row `t` and an event row `r`,
`key(r)` the key an event looks up (None: scan), `setter(t, r)` the updated table row.
`max_rows` (the host policy's limits.table_rows, set by whoever runs the plan) caps the rows
kept: inserts of new rows beyond it are refused, counted in `refused` and logged.
"""

import logging

from cep.engine.table.base import EventTable
from cep.errors import AnnotationError
from cep.model import AttrType
from cep.model.annotations import find_annotation

# types whose `==` is Python's on values of that one type: a hash lookup finds every match
HASHABLE = (
    AttrType.STRING,
    AttrType.INT,
    AttrType.LONG,
    AttrType.BOOL,
    AttrType.DOUBLE,
    AttrType.FLOAT,
)


def _file(index, pos, rows):
    """Add `rows` to `index` ({value of attribute `pos`: rows}), keeping their order."""
    for row in rows:
        v = row[pos]
        bucket = index.get(v)
        if bucket is None:
            index[v] = [row]
        else:
            bucket.append(row)


class SecondaryProbe:
    """`T.a == expr` on a table without a key: `pos` is a's position, `key(r)` the value an
    event looks up."""

    __slots__ = ("pos", "key")

    def __init__(self, pos, key):
        self.pos, self.key = pos, key


def key_attribute(definition):
    """The name of the table's unique key attribute, or None; rejects compound keys."""
    ann = find_annotation(definition.annotations, "IndexBy") or find_annotation(
        definition.annotations, "PrimaryKey"
    )
    if ann is None:
        return None
    values = [v for _, v in ann.elements]
    if len(values) != 1 or "," in values[0]:
        raise AnnotationError(
            f"@{ann.name} on table {definition.id} takes exactly one attribute, got "
            f"{', '.join(values) or 'none'}",
            ann.span,
        )
    name = values[0].strip()
    if definition.index_of(name) < 0:
        raise AnnotationError(
            f"@{ann.name}('{name}'): table {definition.id} has no attribute {name}", ann.span
        )
    return name


log = logging.getLogger(__name__)


class Table(EventTable):
    """The rows of one `define table`, in memory."""

    max_rows = None  # most rows kept; None: no limit
    refused = 0  # rows refused because the table was full

    def __init__(self, definition):
        self.definition = definition
        self.id = definition.id
        self.key_name = key_attribute(definition)
        self.key_pos = definition.index_of(self.key_name) if self.key_name else None
        self.rows = {} if self.key_pos is not None else []
        self._by = {}  # position -> {value: [rows in insertion order]} (tables without a key)

    @property
    def indexed(self):
        return self.key_pos is not None

    def __len__(self):
        return len(self.rows)

    def all_rows(self):
        return list(self.rows.values()) if self.indexed else list(self.rows)

    # -- reads ----------------------------------------------------------------------------
    def compile_probe(self, expr, is_table_var, compile_event, args):
        """The key function `key(*args)` of `T.key == expr` in `expr`, or None (scan)."""
        from cep.engine.expressions import make_function
        from cep.engine.table.keys import equi_split

        if expr is None:
            return None
        side = lambda v: "table" if is_table_var(v) else "event"  # noqa: E731
        pairs, _ = equi_split(expr, side, probe="event", stored="table")

        def key_fn(k):
            return make_function(
                "key", f"def key({', '.join(args)}):\n    return {k.source}\n", k.globals
            )

        for stored, probe in pairs:
            if self.indexed and stored.name == self.key_name:
                return key_fn(compile_event(probe))
        if self.indexed:
            return None
        for stored, probe in pairs:
            pos = self.definition.index_of(stored.name)
            if pos < 0 or self.definition.attributes[pos].type not in HASHABLE:
                continue
            k = compile_event(probe)
            if k.type == self.definition.attributes[pos].type:
                return SecondaryProbe(pos, key_fn(k))
        return None

    def probe_values(self, probe):
        return probe.key if isinstance(probe, SecondaryProbe) else probe

    def find(self, probe, values):
        if isinstance(probe, SecondaryProbe):
            return self._index(probe.pos).get(values, ())
        return self.candidates(values, probe is not None)

    def _index(self, pos):
        """{value: rows} of attribute `pos`, in insertion order (a table without a key)."""
        index = self._by.get(pos)
        if index is None:
            index = self._by[pos] = {}
            _file(index, pos, self.rows)
        return index

    def _changed(self):
        """Rows were removed or rewritten: the indexes are built again on their next use."""
        self._by = {}

    def candidates(self, key_value, use_key):
        """Rows that may match: the key's row when `use_key`, else all rows in order."""
        if use_key:
            row = self.rows.get(key_value)
            return () if row is None else (row,)
        return self.rows.values() if self.indexed else self.rows

    def _cands(self, r, key):
        if isinstance(key, SecondaryProbe):
            return self._index(key.pos).get(key.key(r), ())
        return self.candidates(key(r) if key else None, key is not None)

    def matching(self, r, cond, key=None):
        """Rows meeting cond(t, r), in insertion order."""
        cands = self._cands(r, key)
        if cond is None:
            return list(cands)
        return [t for t in cands if cond(t, r)]

    def contains(self, r, cond, key=None):
        """`cond in T`: some row meets the condition."""
        cands = self._cands(r, key)
        if cond is None:
            return bool(cands)
        return any(cond(t, r) for t in cands)

    # -- writes ---------------------------------------------------------------------------
    def insert(self, rows):
        if self.max_rows is not None and len(self.rows) + len(rows) > self.max_rows:
            rows = self._within_limit(rows)
        if self.indexed:
            k = self.key_pos
            store = self.rows
            for row in rows:
                store[row[k]] = row
        else:
            self.rows.extend(rows)
            for pos, index in self._by.items():
                _file(index, pos, rows)

    def _within_limit(self, rows):
        """The rows that fit under max_rows (a new key of a keyed table needs room, an
        existing one does not); the rest are refused and counted."""
        room = self.max_rows - len(self.rows)
        kept = []
        for row in rows:
            if self.indexed and row[self.key_pos] in self.rows:
                kept.append(row)
            elif room > 0:
                kept.append(row)
                room -= 1
        refused = len(rows) - len(kept)
        if refused:
            first = self.refused == 0
            self.refused += refused
            if first or self.refused % 100_000 < refused:
                log.warning(
                    "table %s is full (%d rows, limits.table_rows): %d rows refused so far",
                    self.id,
                    self.max_rows,
                    self.refused,
                )
        return kept

    def delete(self, events, cond, key=None):
        for r in events:
            if key is not None and self.indexed:
                kv = key(r)
                t = self.rows.get(kv)
                if t is not None and (cond is None or cond(t, r)):
                    del self.rows[kv]
            elif self.indexed:
                for kv in [kv for kv, t in self.rows.items() if cond is None or cond(t, r)]:
                    del self.rows[kv]
            elif isinstance(key, SecondaryProbe):
                hits = {id(t) for t in self._cands(r, key) if cond is None or cond(t, r)}
                if hits:
                    self.rows = [t for t in self.rows if id(t) not in hits]
                    self._changed()
            else:
                n = len(self.rows)
                self.rows = [t for t in self.rows if not (cond is None or cond(t, r))]
                if len(self.rows) != n:
                    self._changed()

    def update(self, events, cond, setter, key=None, insert_row=None):
        """Rewrite matching rows with setter(t, r); with insert_row, insert when none match."""
        for r in events:
            hits = self.matching(r, cond, key)
            if hits:
                self._replace(hits, r, setter)
            elif insert_row is not None:
                self.insert((insert_row(r),))

    def _replace(self, hits, r, setter):
        if self.indexed:
            k = self.key_pos
            for t in hits:
                new = setter(t, r)
                if new[k] != t[k]:
                    del self.rows[t[k]]
                self.rows[new[k]] = new
            return
        ids = {id(t) for t in hits}
        self.rows = [setter(t, r) if id(t) in ids else t for t in self.rows]
        self._changed()

    # -- snapshot -------------------------------------------------------------------------
    def get_state(self):
        return self.all_rows()

    def set_state(self, rows):
        self.rows = {} if self.indexed else []
        self._changed()
        self.insert(rows)
