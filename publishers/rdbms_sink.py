"""`@sink(type='rdbms')`: each output batch written as rows of a database table in one
transaction (SQLAlchemy Core, one executemany), through a datasource of the operator's
conf/datasources.yaml (cep/policy/datasources.py), the ones database tables use.

    @sink(type='rdbms', datasource='orders', table.name='Trades')                  -- insert
    @sink(type='rdbms', datasource='orders', table.name='Latest', mode='upsert', on.key='symbol')

The table is created when missing: one column per attribute (the types of database tables,
cep/engine/table/pushdown.py; `field.length` sizes string columns), `on.key` as its primary
key. An existing table must have a column per attribute (it may have more); for upsert its
key columns must carry a primary key or unique constraint. Upsert is `INSERT .. ON CONFLICT
(keys) DO UPDATE` on PostgreSQL and SQLite (their SQLAlchemy dialect inserts); a batch with a
key twice writes the last row of that key.

Failures:
- a row the database refuses (a duplicate key on insert, a value too long): the batch is
  written again row by row, each in a savepoint, so only the refused rows are left out; they
  are counted (`bad_rows`) and logged with the database's reason.
- the database cannot be reached, or the table is gone: the batch is held in memory (its
  rows, in order, up to `max.pending`; beyond that the oldest are dropped, counted as `lost`
  and logged at ERROR) and written, before anything newer, by the next batch or every
  `retry.interval` seconds. The SinkSet counts held events (`held`), not lost ones.
"""

import logging
import threading

from sqlalchemy import Column, MetaData, String, Table as SqlTable, inspect
from sqlalchemy.exc import DataError, IntegrityError, SQLAlchemyError

from cep.model.sink_store import rdbms_sink_spec
from cep.policy.exceptions import PolicyViolation
from publishers.base import Sink
from publishers.exceptions import SinkConfigError, SinkHeldError

log = logging.getLogger(__name__)
_ROW_ERRORS = (IntegrityError, DataError)


class RdbmsSink(Sink):
    """See the module doc; `tenant` (when given) must be allowed to use the datasource."""

    type = "rdbms"

    def __init__(self, stream, options, definition, tenant=None, datasources_path=None):
        super().__init__(stream, options)
        self.where = f"@sink(type='rdbms') on stream {stream}"
        if definition is None:
            raise SinkConfigError(f"{self.where}: needs the stream's definition")
        from cep.connectors import problems

        found = problems("sink", "rdbms", list(self.options))
        if found:
            raise SinkConfigError(f"{found[0]} (on stream {stream})")
        try:
            self.spec = rdbms_sink_spec(self.options, definition)
        except ValueError as exc:
            raise SinkConfigError(f"{self.where}: {exc}") from None
        from cep.engine.table.rdbms import engine_for
        from cep.policy.datasources import check_datasource

        try:
            ds = check_datasource(self.spec.datasource, tenant, datasources_path)
            self.engine = engine_for(ds)
        except PolicyViolation as exc:
            raise SinkConfigError(f"{self.where}: {exc}") from None
        dialect = self.engine.dialect.name
        if self.spec.mode == "upsert" and dialect not in ("postgresql", "sqlite"):
            raise SinkConfigError(
                f"{self.where}: mode='upsert' needs PostgreSQL or SQLite "
                f"(datasource '{self.spec.datasource}' is {dialect})"
            )
        self.definition = definition
        self.names = [a.name for a in definition.attributes]
        self.sql = None  # the SQLAlchemy Table once opened
        self.pending = []  # rows held while the database cannot be written
        self.bad_rows = self.lost = self.retries = self.held_batches = 0
        self.last_error = None
        self.lock = threading.Lock()
        self._stop = threading.Event()
        self._retrier = None
        try:
            self._open()
        except SQLAlchemyError as exc:  # unreachable now: opened again at the first write
            self.last_error = _short(exc)
            log.warning(
                "%s: datasource '%s' not reachable yet (%s); rows are held and written when it is",
                self.where,
                self.spec.datasource,
                self.last_error,
            )

    # -- schema ---------------------------------------------------------------------------
    def _open(self):
        """The table: created when missing, else checked; SinkConfigError when it cannot
        take the rows (missing columns, no unique key for upsert)."""
        name, spec = self.spec.table_name, self.spec
        lengths = dict(spec.field_lengths)
        insp = inspect(self.engine)
        if insp.has_table(name):
            found = {c["name"].lower(): c["name"] for c in insp.get_columns(name)}
            missing = [n for n in self.names if n.lower() not in found]
            if missing:
                raise SinkConfigError(
                    f"{self.where}: the database table '{name}' has no "
                    f"column {', '.join(missing)} (it has "
                    f"{', '.join(found.values())})"
                )
            columns = [found[n.lower()] for n in self.names]
            if spec.mode == "upsert":
                self._check_unique(insp, name, [found[k.lower()] for k in spec.keys])
        else:
            columns = list(self.names)
        from cep.engine.table.pushdown import sql_type

        cols = []
        for attr, col in zip(self.definition.attributes, columns):
            t = sql_type(attr.type)
            if t is String and attr.name in lengths:
                t = String(lengths[attr.name])
            cols.append(Column(col, t, primary_key=attr.name in spec.keys, autoincrement=False))
        table = SqlTable(name, MetaData(), *cols)
        table.metadata.create_all(self.engine, checkfirst=True)
        self.columns = columns
        self.key_columns = [columns[self.names.index(k)] for k in spec.keys]
        self.sql = table

    def _check_unique(self, insp, name, keys):
        wanted = {k.lower() for k in keys}
        pk = insp.get_pk_constraint(name).get("constrained_columns") or []
        uniques = [u.get("column_names") or [] for u in insp.get_unique_constraints(name)]
        uniques += [i.get("column_names") or [] for i in insp.get_indexes(name) if i.get("unique")]
        if not any({c.lower() for c in cols if c} == wanted for cols in [pk] + uniques):
            raise SinkConfigError(
                f"{self.where}: mode='upsert' on.key='{','.join(self.spec.keys)}' needs a "
                f"primary key or unique constraint on exactly those columns of the existing "
                f"table '{name}'; it has none"
            )

    def _statement(self, dialect):
        if self.spec.mode == "insert":
            return self.sql.insert()
        if dialect == "postgresql":
            from sqlalchemy.dialects.postgresql import insert
        elif dialect == "sqlite":
            from sqlalchemy.dialects.sqlite import insert
        else:
            raise SinkConfigError(
                f"{self.where}: mode='upsert' needs PostgreSQL or SQLite "
                f"(this datasource is {dialect})"
            )
        stmt = insert(self.sql)
        others = {c: stmt.excluded[c] for c in self.columns if c not in self.key_columns}
        if not others:
            return stmt.on_conflict_do_nothing(index_elements=self.key_columns)
        return stmt.on_conflict_do_update(index_elements=self.key_columns, set_=others)

    # -- writes ---------------------------------------------------------------------------
    def _params(self, events):
        cols = self.columns
        return [dict(zip(cols, row)) for _, row in events]

    def write_batch(self, events):
        rows = self._params(events)
        with self.lock:
            self.pending.extend(rows)
            if self._flush():
                return
            self.held_batches += 1
            self._bound()
            self._start_retrier()
            raise SinkHeldError(
                f"rdbms sink {self.spec.datasource}/{self.spec.table_name}: "
                f"{self.last_error}; {len(self.pending)} rows held"
            )

    def _flush(self):
        """Write every held row in one transaction (counted in `written`); False (rows
        kept) when the database could not be written. Called with the lock held."""
        if not self.pending:
            return True
        rows, bad_before = self.pending, self.bad_rows
        if self.spec.mode == "upsert":
            rows = self._last_per_key(rows)
        try:
            if self.sql is None:
                self._open()
            try:
                with self.engine.begin() as conn:
                    conn.execute(self._statement(conn.dialect.name), rows)
            except _ROW_ERRORS:  # rolled back: again row by row, leaving out refused rows
                with self.engine.begin() as conn:
                    self._one_by_one(conn, self._statement(conn.dialect.name), rows)
        except SinkConfigError as exc:  # e.g. the table was replaced by one it cannot use
            self.last_error = str(exc)
            return False
        except SQLAlchemyError as exc:
            self.last_error = f"{type(exc).__name__}: {_short(exc)}"
            self.sql = None  # look at the table again before the next attempt
            return False
        self.written += len(self.pending) - (self.bad_rows - bad_before)
        self.pending = []
        self.last_error = None
        return True

    def _one_by_one(self, conn, stmt, rows):
        for row in rows:
            try:
                with conn.begin_nested():
                    conn.execute(stmt, row)
            except _ROW_ERRORS as exc:
                self.bad_rows += 1
                log.warning(
                    "%s: the database refused a row (left out): %s; row %s",
                    self.where,
                    _short(exc),
                    row,
                )

    def _last_per_key(self, rows):
        """One row per key (the last), at its first position: ON CONFLICT cannot update a row
        twice in one statement."""
        by_key = {}
        for row in rows:
            by_key[tuple(row[k] for k in self.key_columns)] = row
        return list(by_key.values()) if len(by_key) < len(rows) else rows

    def _bound(self):
        over = len(self.pending) - self.spec.max_pending
        if over > 0:
            del self.pending[:over]
            self.lost += over
            log.error(
                "%s: %d held rows dropped (max.pending=%d reached while the database "
                "cannot be written: %s)",
                self.where,
                over,
                self.spec.max_pending,
                self.last_error,
            )

    def _start_retrier(self):
        if self._retrier is None or not self._retrier.is_alive():
            self._retrier = threading.Thread(
                target=self._retry, daemon=True, name=f"rdbms sink retry {self.stream}"
            )
            self._retrier.start()

    def _retry(self):
        while not self._stop.wait(self.spec.retry_interval):
            with self.lock:
                if not self.pending:
                    return
                self.retries += 1
                n = len(self.pending)
                if self._flush():
                    log.info("%s: %d held rows written", self.where, n)
                    return

    def close(self):
        self._stop.set()
        with self.lock:
            if self.pending and not self._flush():
                self.lost += len(self.pending)
                log.error(
                    "%s: closing with %d rows the database did not take: %s",
                    self.where,
                    len(self.pending),
                    self.last_error,
                )
                self.pending = []

    def describe(self):
        return {
            **super().describe(),
            "datasource": self.spec.datasource,
            "table": self.spec.table_name,
            "mode": self.spec.mode,
            "pending": len(self.pending),
            "bad_rows": self.bad_rows,
            "lost": self.lost,
            "retries": self.retries,
            "last_error": self.last_error,
        }


def _short(exc):
    text = str(getattr(exc, "orig", None) or exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
