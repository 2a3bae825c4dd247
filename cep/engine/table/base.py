"""The interface every event table backend implements, so joins, `in`, `insert into`,
`update`, `delete` and `update or insert` run the same against any of them.

A backend gets compiled callables from the engine: `cond(t, r)` (does table row `t` match event
row `r`), `setter(t, r)` (the updated row) and `insert_row(r)`. It also compiles a *probe* for a
condition (`compile_probe`): backend-specific narrowing of the rows a condition can match, so
an in-memory table reads one row by its hash key and a database table sends the translatable
part of the condition as SQL. A probe only narrows: the engine still applies `cond` to every
row it returns, so a probe never changes a result.

- `Table` (cep.engine.table.store): in memory; its probe is the key of `T.key == expr`; it
  also exposes `rows`/`indexed` for the generated whole-batch hash lookups of joins.
- `RdbmsTable` (cep.engine.table.rdbms): a database table through SQLAlchemy Core; its probe
  is a WHERE clause with the event's values as bound parameters; rows are not snapshotted
  (`persistent`), they live in the database.
"""

from abc import ABC, abstractmethod
from typing import Any, Callable, Iterable, Optional

Row = tuple


class EventTable(ABC):
    """One `define table`'s rows."""

    definition: Any
    id: str
    indexed: bool = False  # an in-memory hash key the generated lookups may read (`rows`)
    persistent: bool = False  # rows live outside the engine: not part of its snapshots
    max_rows: Optional[int] = None

    def compile_in(self, e, gen, outer):
        """Code for `condition in <this table>` (an InTable node) against the event scope
        `outer`; `gen` is the expression compiler that met it. Every backend: the condition
        narrows with the backend's own probe (a key, a WHERE clause) where it has one."""
        from cep.engine.table.conditions import compile_in_table

        return compile_in_table(e, gen, outer, {self.id: self})

    @abstractmethod
    def compile_probe(
        self, expr, is_table_var: Callable, compile_event: Callable, args: tuple
    ) -> Any:
        """A probe for condition `expr` (None: every row is a candidate). `is_table_var(v)`
        tells table attributes from event ones, `compile_event(expr)` compiles an
        event-side expression, `args` are the event row variables the probe's values read."""

    @abstractmethod
    def probe_values(self, probe) -> Optional[Callable]:
        """`values(*args)`: what `find` needs from an event to use `probe` (None: nothing)."""

    @abstractmethod
    def find(self, probe, values) -> Iterable[Row]:
        """The candidate rows for a probe and an event's values, in insertion order."""

    def candidates(self, key_value=None, use_key=False) -> Iterable[Row]:
        """Every row (a backend without a hash key the engine can read)."""
        return self.find(None, None)

    def matching(self, r, cond, probe=None) -> list:
        """Rows meeting cond(t, r), in insertion order."""
        rows = self.find(probe, self._values(probe, r))
        return list(rows) if cond is None else [t for t in rows if cond(t, r)]

    def contains(self, r, cond, probe=None) -> bool:
        """`cond in T`: some row meets the condition."""
        rows = self.find(probe, self._values(probe, r))
        return any(True for _ in rows) if cond is None else any(cond(t, r) for t in rows)

    def _values(self, probe, r):
        values = self.probe_values(probe)
        return None if values is None else values(r)

    @abstractmethod
    def insert(self, rows: list) -> None:
        """Add rows (with a unique key: a row with an existing key replaces it in place)."""

    @abstractmethod
    def delete(self, events: list, cond, probe=None) -> None:
        """Per event in order: remove the rows meeting cond(t, r)."""

    @abstractmethod
    def update(self, events: list, cond, setter, probe=None, insert_row=None) -> None:
        """Per event in order: rewrite the rows meeting cond(t, r) with setter(t, r); with
        insert_row, insert insert_row(r) when none matches (`update or insert`)."""

    @abstractmethod
    def all_rows(self) -> list:
        """Every row, in insertion order."""

    def __len__(self):
        return len(self.all_rows())

    def get_state(self):
        return self.all_rows()

    def set_state(self, rows):
        raise NotImplementedError

    def close(self) -> None:
        """Release connections (the plan is shut down)."""
