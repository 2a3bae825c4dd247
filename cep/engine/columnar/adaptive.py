"""Row batches through a query's columnar kernel when that is faster for this query.

A query with a columnar kernel (stateless filters and projections, sliding and running
aggregates) gives the same output from rows and from columns (the conformance suite runs
both). Which path costs less per event depends on the query: converting a row batch to
columns and the kernel's output back to rows costs about 300 ns an event, so a projection of
plain attributes stays faster as rows, while one that calls several functions per event (the
`str:`/`math:` extensions, arithmetic over many columns) runs several times faster through
its numpy kernel even with both conversions.

So each such query measures instead of guessing: its first row batches of at least
`MIN_BATCH` events go in blocks of `BLOCK` batches, alternately through the two paths, timed
by the thread's CPU clock (another process on the machine does not count). The first batch of
each block is left out: it pays for switching paths (a window the kernel holds as columns is
turned back into rows, and the other way round), which neither path pays once chosen. The
cheaper path per event then takes every batch; columns only when they cost at most `MARGIN`
of the rows. Every `RECHECK` batches the trial runs again (batch sizes and data change).
Output is the same whichever path runs: only its speed differs. Smaller batches stay rows."""

from time import thread_time_ns
from typing import Any, Callable

from cep.engine.columnar.columns import Columns
from cep.model import StreamDefinition

MIN_BATCH = 64  # smaller batches: the conversions' fixed costs dominate, rows
BLOCK = 3  # consecutive trial batches on one path (the first of them not timed)
ROUNDS = 2  # blocks per path in a trial
MARGIN = 0.85  # columns must cost at most this share of the rows' time per event
RECHECK = 5000  # batches between two trials
# None: measure (above); True / False: always / never columns (tests run both paths this way)
FORCE: "bool | None" = None


class RowsThroughKernel:
    """Installed as a selector's `process`: see the module docstring. `rows` is the
    selector's own row method, `columns` its `process_columns`."""

    def __init__(
        self,
        definition: StreamDefinition,
        rows: Callable[[Any], None],
        columns: Callable[[Columns], None],
    ) -> None:
        self.definition, self.rows, self.columns = definition, rows, columns
        self.use_columns = False
        self._reset()
        self._inside = False  # a kernel that declines a batch hands it back as rows

    def _reset(self) -> None:
        self.deciding = True
        self.spent = [0, 0]  # ns per path (rows, columns) over the timed batches
        self.events = [0, 0]
        self.tried = 0  # trial batches so far
        self.since = 0

    def __call__(self, batch: Any) -> None:
        if self._inside or FORCE is False or (FORCE is None and len(batch) < MIN_BATCH):
            self.rows(batch)
            return
        if FORCE:
            self._through_columns(batch)
            return
        if self.deciding:
            self._trial(batch)
            return
        self.since += 1
        if self.since >= RECHECK:
            self._reset()
        if self.use_columns:
            self._through_columns(batch)
        else:
            self.rows(batch)

    def _through_columns(self, batch: Any) -> None:
        self._inside = True
        try:
            self.columns(Columns.from_events(self.definition, batch))
        finally:
            self._inside = False

    def _trial(self, batch: Any) -> None:
        block, first = divmod(self.tried, BLOCK)
        path = block % 2  # rows, then columns, then rows ...
        start = thread_time_ns()
        if path:
            self._through_columns(batch)
        else:
            self.rows(batch)
        took = thread_time_ns() - start
        self.tried += 1
        if first:  # not the block's first batch (that one switched paths)
            self.spent[path] += took
            self.events[path] += len(batch)
        if self.tried >= 2 * BLOCK * ROUNDS:
            rows, cols = (self.spent[i] / max(self.events[i], 1) for i in (0, 1))
            self.use_columns = cols <= MARGIN * rows
            self.deciding = False


def install(selector: Any, definition: StreamDefinition) -> None:
    """Route `selector`'s row batches through its `process_columns` when faster (above)."""
    selector.process = RowsThroughKernel(
        definition, type(selector).process.__get__(selector), selector.process_columns
    )
