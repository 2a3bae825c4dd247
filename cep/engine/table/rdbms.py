"""An event table whose rows live in a database (`@from(eventtable='rdbms')`,
`@store(type='rdbms')`), through SQLAlchemy Core, so one code path serves SQLite, PostgreSQL
and any other database SQLAlchemy has a dialect for.

The table is created when missing: one column per attribute (named as the attribute), the
unique key (`@PrimaryKey`/`@IndexBy`) as its primary key, and a `cep_seq` column that keeps
insertion order, so rows come back in the order an in-memory table would give them. An existing
table is used as it is when it has a column per attribute (without `cep_seq` its row order is
the database's).

Reads send the translatable part of a condition as a WHERE clause with the event's values as
bound parameters (cep.engine.table.pushdown) and, with `cache=...`, keep results in a
ResultCache. Writes run per batch in one transaction, event by event (a later event sees an
earlier one's write), and clear the cache. Rows are never in the engine's snapshots: they
survive a restart because the database keeps them.
"""

import itertools
import logging
import threading
from pathlib import Path

from sqlalchemy import (
    BigInteger,
    Column,
    MetaData,
    String,
    Table as SqlTable,
    and_,
    create_engine,
    delete,
    func,
    inspect,
    or_,
    select,
    update,
)
from sqlalchemy.exc import DBAPIError, SQLAlchemyError

from cep.engine.expressions import make_function
from cep.engine.table.base import EventTable
from cep.engine.table.cache import ResultCache
from cep.engine.table.pushdown import sql_type, translate
from cep.engine.table.store import key_attribute
from cep.errors import AnnotationError

log = logging.getLogger(__name__)
SEQ = "cep_seq"
_engines = {}
_engines_lock = threading.Lock()
_probe_ids = itertools.count()


def engine_for(datasource):
    """One SQLAlchemy engine (connection pool) per datasource URL in a process."""
    url = datasource.connect_url()
    key = url.render_as_string(hide_password=False)
    with _engines_lock:
        engine = _engines.get(key)
        if engine is None:
            options = dict(datasource.options)
            if url.drivername.startswith("sqlite"):
                options.setdefault("connect_args", {"timeout": 30, "check_same_thread": False})
                if url.database and url.database != ":memory:":
                    Path(url.database).parent.mkdir(parents=True, exist_ok=True)
                else:  # one in-memory database per process: every user shares its connection
                    from sqlalchemy.pool import StaticPool

                    options.setdefault("poolclass", StaticPool)
            else:
                options.setdefault("pool_pre_ping", True)
            engine = _engines[key] = create_engine(url, **options)
        return engine


class SqlProbe:
    """A pushed-down condition: a compiled SELECT and the event values it binds."""

    def __init__(self, statement, values, names):
        self.id = next(_probe_ids)
        self.statement = statement
        self.values = values  # values(*args) -> tuple of parameter values
        self.names = names  # parameter names p0..pn
        self.broken = False  # the database refused it once: scan instead


class RdbmsTable(EventTable):
    persistent = True
    indexed = False

    def __init__(self, definition, spec, datasource):
        self.definition = definition
        self.id = definition.id
        self.spec = spec
        self.key_name = key_attribute(definition)
        self.names = [a.name for a in definition.attributes]
        if SEQ in self.names:
            raise AnnotationError(
                f"table '{self.id}': the attribute name {SEQ} is reserved "
                f"for the row order column of a database table",
                spec.annotation.span,
            )
        self.engine = engine_for(datasource)
        try:
            self.sql, self.has_seq = self._open_table()
            self.reader = self.engine.connect().execution_options(isolation_level="AUTOCOMMIT")
            self.seq = self._max_seq() + 1
        except SQLAlchemyError as exc:
            raise AnnotationError(
                f"@{spec.annotation.name} on table '{self.id}': datasource "
                f"'{spec.datasource}': {_short(exc)}",
                spec.annotation.span,
            ) from None
        self.cols = [self.sql.c[n] for n in self.sql_names]
        order = [self.sql.c[SEQ]] if self.has_seq else []
        self.select_all = select(*self.cols).order_by(*order)
        self.select_seq = select(
            self.sql.c[SEQ] if self.has_seq else self.cols[0], *self.cols
        ).order_by(*order)
        self.cache = (
            ResultCache(spec.cache, spec.cache_size, spec.validity_ms) if spec.cache else None
        )
        self.lock = threading.RLock()

    # -- schema ---------------------------------------------------------------------------
    def _open_table(self):
        name = self.spec.table_name
        lengths = dict(self.spec.field_lengths)
        insp = inspect(self.engine)
        if insp.has_table(name):
            found = {c["name"].lower(): c["name"] for c in insp.get_columns(name)}
            missing = [n for n in self.names if n.lower() not in found]
            if missing:
                raise AnnotationError(
                    f"@{self.spec.annotation.name} on table '{self.id}': the database table "
                    f"'{name}' has no column {', '.join(missing)} (it has "
                    f"{', '.join(found.values())})",
                    self.spec.annotation.span,
                )
            self.sql_names = [found[n.lower()] for n in self.names]
            has_seq = SEQ in found
        else:
            self.sql_names = list(self.names)
            has_seq = True
        columns = []
        for attr, col in zip(self.definition.attributes, self.sql_names):
            t = sql_type(attr.type)
            if t is String and attr.name in lengths:
                t = String(lengths[attr.name])
            columns.append(
                Column(col, t, primary_key=attr.name == self.key_name, autoincrement=False)
            )
        if has_seq:
            columns.append(Column(SEQ, BigInteger, index=True))
        table = SqlTable(name, MetaData(), *columns)
        table.metadata.create_all(self.engine, checkfirst=True)
        return table, has_seq

    def _max_seq(self):
        if not self.has_seq:
            return 0
        return self.reader.execute(select(func.max(self.sql.c[SEQ]))).scalar() or 0

    # -- probes ---------------------------------------------------------------------------
    def compile_probe(self, expr, is_table_var, compile_event, args):
        pushed = translate(
            expr,
            [self.sql.c[n] for n in self.sql_names],
            self.definition,
            is_table_var,
            compile_event,
        )
        if pushed is None:
            return None
        g = {}
        for c in pushed.event_exprs:
            g.update(c.globals)
        body = ", ".join(c.source for c in pushed.event_exprs)
        values = make_function(
            "values", f"def values({', '.join(args)}):\n    return ({body},)\n", g
        )
        names = [f"p{i}" for i in range(len(pushed.event_exprs))]
        return SqlProbe(pushed.where, values, names)

    def probe_values(self, probe):
        return None if probe is None else probe.values

    def find(self, probe, values):
        cache = self.cache
        if cache is not None:
            key = (None, ()) if probe is None else (probe.id, values)
            rows = cache.get(key)
            if rows is None:
                rows = self._read(self.reader, probe, values, False)
                cache.put(key, rows)
            return rows
        return self._read(self.reader, probe, values, False)

    def _read(self, conn, probe, values, with_seq):
        base = self.select_seq if with_seq else self.select_all
        if probe is None or probe.broken:
            result = conn.execute(base)
        else:
            try:
                result = conn.execute(base.where(probe.statement), dict(zip(probe.names, values)))
            except DBAPIError as exc:
                # e.g. an integer overflow PostgreSQL refuses: narrow nothing from now on
                log.warning(
                    "table %s: the database refused a pushed-down condition (%s); "
                    "scanning the table for it instead",
                    self.id,
                    _short(exc),
                )
                probe.broken = True
                if conn is not self.reader:
                    raise
                result = conn.execute(base)
        if with_seq:
            return [(r[0], tuple(r[1:])) for r in result]
        return tuple(tuple(r) for r in result)

    # -- writes ---------------------------------------------------------------------------
    def insert(self, rows):
        rows = list(rows)
        if not rows:
            return
        with self.lock, self.engine.begin() as conn:
            self._insert(conn, rows)
        self._changed()

    def _insert(self, conn, rows):
        if self.key_name is not None:
            k = self.names.index(self.key_name)
            by_key = {}
            for row in rows:  # the last value of a key, at its first position
                by_key[row[k]] = row
            rows = list(by_key.values())
        params = []
        for row in rows:
            p = dict(zip(self.sql_names, row))
            if self.has_seq:
                p[SEQ] = self.seq
                self.seq += 1
            params.append(p)
        stmt = self._insert_statement(conn)
        if stmt is None:  # a database without an upsert dialect: delete the keys, insert
            k = self.names.index(self.key_name)
            conn.execute(delete(self.sql).where(self.cols[k].in_([r[k] for r in rows])))
            stmt = self.sql.insert()
        conn.execute(stmt, params)

    def _insert_statement(self, conn):
        if self.key_name is None:
            return self.sql.insert()
        dialect = conn.dialect.name
        key_col = self.sql_names[self.names.index(self.key_name)]
        if dialect in ("sqlite", "postgresql"):
            if dialect == "sqlite":
                from sqlalchemy.dialects.sqlite import insert
            else:
                from sqlalchemy.dialects.postgresql import insert
            stmt = insert(self.sql)
            others = {n: stmt.excluded[n] for n in self.sql_names if n != key_col}
            if not others:
                return stmt.on_conflict_do_nothing(index_elements=[key_col])
            return stmt.on_conflict_do_update(index_elements=[key_col], set_=others)
        return None

    def delete(self, events, cond, probe=None):
        with self.lock, self.engine.begin() as conn:
            for r in events:
                hits = self._hits(conn, r, cond, probe)
                if hits:
                    conn.execute(delete(self.sql).where(self._identity(hits)))
        self._changed()

    def update(self, events, cond, setter, probe=None, insert_row=None):
        with self.lock, self.engine.begin() as conn:
            for r in events:
                hits = self._hits(conn, r, cond, probe)
                if hits:
                    self._rewrite(conn, hits, r, setter)
                elif insert_row is not None:
                    self._insert(conn, [insert_row(r)])
        self._changed()

    def _hits(self, conn, r, cond, probe):
        values = None if probe is None else probe.values(r)
        rows = self._read(conn, probe, values, True)
        return [(s, t) for s, t in rows if cond is None or cond(t, r)]

    def _rewrite(self, conn, hits, r, setter):
        k = self.names.index(self.key_name) if self.key_name else None
        for seq, t in hits:
            new = setter(t, r)
            if k is not None and new[k] != t[k]:
                # the new key replaces a row that has it, as in an in-memory table
                conn.execute(delete(self.sql).where(self.cols[k] == new[k]))
            conn.execute(
                update(self.sql)
                .where(self._identity([(seq, t)]))
                .values(dict(zip(self.sql_names, new)))
            )

    def _identity(self, hits):
        """A WHERE clause naming exactly these rows (by order column, key or values)."""
        if self.has_seq:
            return self.sql.c[SEQ].in_([s for s, _ in hits])
        if self.key_name is not None:
            k = self.names.index(self.key_name)
            return self.cols[k].in_([t[k] for _, t in hits])
        return or_(
            *[
                and_(*[c.is_(None) if v is None else c == v for c, v in zip(self.cols, t)])
                for _, t in hits
            ]
        )

    def _changed(self):
        if self.cache is not None:
            self.cache.clear()

    # -- whole table ----------------------------------------------------------------------
    def all_rows(self):
        return list(self._read(self.reader, None, None, False))

    def __len__(self):
        return self.reader.execute(select(func.count()).select_from(self.sql)).scalar()

    def get_state(self):
        return None  # the rows live in the database

    def set_state(self, rows):
        pass

    def close(self):
        try:
            self.reader.close()
        except SQLAlchemyError:
            pass


def _short(exc):
    text = str(getattr(exc, "orig", None) or exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
