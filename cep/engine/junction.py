"""Stream junctions: fan each batch of a stream out to its subscribers, and input handlers
that check events, keep the playback clock and split batches at timer boundaries."""

import logging
import operator
import threading
from typing import TYPE_CHECKING, Any, Callable, Iterable, Optional, Sequence, cast

from cep.engine.coerce import RowCoercer
from cep.errors import EventError, EventFailure
from cep.model.definitions import StreamDefinition

if TYPE_CHECKING:
    from cep.engine.clock import Scheduler
    from cep.engine.columnar.columns import Columns

# an event inside the engine: (timestamp, row, kind); what users send: (timestamp or None, row)
Event = tuple[int, tuple[Any, ...], int]
# an event left out of a batch: its index in the batch and why
BadEvent = tuple[int, EventError]

log = logging.getLogger("cep.engine")


class StreamJunction:
    """One per stream: `process(batch)` hands the batch to every subscriber in order."""

    def __init__(self, definition: StreamDefinition) -> None:
        self.definition = definition
        self.subscribers: list[Any] = []
        self.one_by_one = False  # hand batches over event by event (plans with scripts)
        self.failed = 0  # events a query dropped because processing them failed

    @property
    def stream_id(self) -> str:
        return self.definition.id

    def subscribe(self, processor: Any) -> None:
        self.subscribers.append(processor)

    def subscribe_first(self, processor: Any) -> None:
        """Subscribe ahead of the queries (this subscriber sees an event before its results)."""
        n = sum(1 for s in self.subscribers if isinstance(s, CallbackSink))
        self.subscribers.insert(n, processor)

    def subscribe_callback(self, processor: Any) -> None:
        """A user callback: after the queries that read the stream, as Siddhi 3.2's junction
        hands an event to its receivers in subscription order and callbacks are added once the
        plan's queries exist (so what a query makes of an event comes out before the event's
        own callback, and a map a later query changes shows changed)."""
        self.subscribers.append(processor)

    def process(self, batch: list[Event]) -> None:
        if self.one_by_one and len(batch) > 1:
            for event in batch:
                self.process([event])
            return
        for s in self.subscribers:
            try:
                s.process(batch)
            except EventFailure as exc:  # that query drops the event(s); the rest go on
                self.failed += len(batch)
                log.error(
                    "stream '%s': an event failed in a query and was dropped (%d so far): %s",
                    self.definition.id,
                    self.failed,
                    exc,
                )

    def process_columns(self, cols: "Columns") -> None:
        """A columnar batch (cep.engine.columnar.Columns): subscribers with a columnar
        kernel take it as is, the others get the same events as rows (made once)."""
        if self.one_by_one:  # plans with script functions: rows, event by event
            self.process(cols.events())
            return
        rows = None
        for s in self.subscribers:
            pc = getattr(s, "process_columns", None)
            if pc is not None:
                pc(cols)
                continue
            if rows is None:
                rows = cols.events()
            if len(rows) <= STEP:
                s.process(rows)
            else:  # in steps, as send_batch does (same output; see STEP)
                for i in range(0, len(rows), STEP):
                    s.process(rows[i : i + STEP])


def _whole(junction: StreamJunction, seen: tuple[StreamJunction, ...] = ()) -> bool:
    """Whether a columnar batch may go through `junction` whole rather than in send_batch's
    steps: only columnar kernels (whose output does not depend on where batches end) and
    callbacks read it, and the same holds downstream of each kernel's output stream. A
    partition, pattern or join reads rows per batch (a partition emits each batch key by
    key), so it gets the steps that send_batch would give it; a partition whose keyed
    pattern kernels all have columnar forms (partition/vector.py: their output does not
    depend on where batches end) names its output streams by `columnar_targets()`."""
    for s in junction.subscribers:
        if type(s) is CallbackSink:
            continue
        targets = getattr(s, "columnar_targets", None)
        if targets is not None:  # a partition whose keyed kernels all have columnar forms
            js = targets()
            if js is None or any(j in seen or not _whole(j, seen + (junction,)) for j in js):
                return False
            continue
        if getattr(s, "process_columns", None) is None or getattr(s, "kernel", True) is None:
            return False
        # a window's kernel that emits for its selector names that selector
        nxt = getattr(getattr(s, "columnar_through", s), "next", None)
        j = getattr(nxt, "junction", None)
        if (
            j is None
            or type(nxt).__name__ != "InsertIntoStream"
            or j in seen
            or not _whole(j, seen + (junction,))
        ):
            return False
    return True


class CallbackSink:
    """A user callback on a stream: `fn` gets a list of `(timestamp, row)` pairs, with
    `columnar=True` a cep.engine.columnar.Columns of each batch (whichever path made it), with
    `events=True` the engine's own `(timestamp, row, 0)` tuples (no copy into pairs)."""

    def __init__(
        self,
        fn: Callable[[Any], object],
        columnar: bool = False,
        definition: Optional[StreamDefinition] = None,
        events: bool = False,
    ) -> None:
        self.fn, self.columnar, self.definition = fn, columnar, definition
        self.events = events and not columnar
        if self.events:
            self.process = fn  # type: ignore[method-assign,assignment]  # the batch as is

    def process(self, batch: list[Event]) -> None:
        if self.columnar:
            from cep.engine.columnar.columns import Columns

            if self.definition is None:
                raise ValueError("a columnar callback needs its stream's definition")
            self.fn(Columns.from_events(self.definition, batch))
        else:
            self.fn([(t, r) for t, r, _ in batch])

    def process_columns(self, cols: "Columns") -> None:
        self.fn(cols if self.columnar else cols.events() if self.events else cols.to_rows())


_TS = operator.itemgetter(0)
# Events per step of a bigger batch (the output is the same either way). A step's short-lived
# tuples (events, rows, output rows) then fit CPython's tuple free lists (2,000 per size), so
# they are reused instead of allocated and do not set off garbage collections: with 1,000
# at once, a length(10) sum set off ~1 collection per batch and ran at 1.4M ev/s, with 500
# 2.9M (A/B, same process).
STEP = 500


class InputHandler:
    """`send(row, timestamp=None)` and `send_batch([(ts, row), ...])` into one stream."""

    def __init__(
        self, junction: StreamJunction, scheduler: "Scheduler", lock: threading.RLock
    ) -> None:
        self.junction, self.scheduler, self.lock = junction, scheduler, lock
        self.coercer = RowCoercer(junction.definition)
        self.stream_id = junction.stream_id
        # (number of subscribers, owner) of the last check
        self._owner_for: tuple[int, Optional[str]] = (-1, None)

    def _owner(self) -> Optional[str]:
        """The stream whose own timers need not split a batch, or None. Every timer due by an
        event fires, in every query of the plan, before any query sees the event (Siddhi
        3.2); a timer owned by this stream may wait until after the batch only when a single
        query reads the stream, since that query does the timer's work inline first."""
        subs = self.junction.subscribers
        if self._owner_for[0] != len(subs):  # subscribers are only ever added
            n = sum(1 for s in subs if type(s) is not CallbackSink)
            self._owner_for = (len(subs), self.stream_id if n <= 1 else None)
        return self._owner_for[1]

    def send(self, row: Sequence[Any], timestamp: Optional[int] = None) -> None:
        """Send one event; raises EventError when it does not fit the stream."""
        with self.lock:
            sch = self.scheduler
            event = self.coercer.coerce_one((timestamp, row), sch.now())
            if not sch.playback:
                self.junction.process([event])
                return
            ts = event[0]
            due = sch.next_due(skip_owner=self._owner())
            if due is not None and due <= ts:
                sch.advance(ts)  # timers due by now fire before the event
            sch.set_clock(ts)
            self.junction.process([event])
            sch.advance(ts)

    def send_batch(
        self, events: Iterable[tuple[Optional[int], Sequence[Any]]], validated: bool = False
    ) -> list[BadEvent]:
        """Send a list of `(timestamp, row)` pairs in order. Bad events are left out and
        returned as `[(index, EventError), ...]`; the good ones are processed.

        `validated=True` is for in-process producers that already hold checked
        `(int timestamp, tuple row)` pairs of the definition's types (a receiver that decoded
        and checked them): the per-value checks are skipped. A batch of more than STEP
        events goes through in steps of STEP (same output, callbacks get one call per step)."""
        with self.lock:
            if not isinstance(events, list):
                events = list(events)
            now = self.scheduler.now()  # the default timestamp of the whole batch
            if len(events) <= STEP:
                return self._send(events, validated, now)
            bad = []
            for i in range(0, len(events), STEP):
                bad += [(i + j, e) for j, e in self._send(events[i : i + STEP], validated, now)]
            return bad

    def send_events(self, events: list[Event]) -> None:
        """Send the engine's own event tuples `(int timestamp, tuple row, 0)`, already checked
        against the stream's types (as `send_batch(..., validated=True)` takes them as
        pairs): for in-process decoders that build these tuples in their one pass."""
        with self.lock:
            if len(events) <= STEP:
                if events:
                    self._dispatch(events)
                return
            for i in range(0, len(events), STEP):
                self._dispatch(events[i : i + STEP])

    def send_columns(self, columns: Any, timestamps: Any = None) -> list[BadEvent]:
        """Send a columnar batch: `columns` maps each attribute name to a column (numpy
        array, masked array for nulls, pyarrow array, or sequence; or a pyarrow RecordBatch /
        Table / DataFrame), `timestamps` an integer array (None: the runtime's clock).
        Checks run per column (cep.engine.columnar.checks). Returns `[(index, EventError)]`
        for events left out (out of range, wrong value type); raises EventError when the
        batch as a whole does not fit (names, lengths, a column's dtype). The output is
        exactly that of `send_batch` with the same events."""
        from cep.engine.columnar.checks import coerce_columns

        with self.lock:
            cols, bad = coerce_columns(
                self.junction.definition, columns, timestamps, self.scheduler.now()
            )
            n = len(cols)
            if n <= STEP or _whole(self.junction):
                if n:
                    self._dispatch_columns(cols)
            else:  # steps of STEP, as send_batch takes them (see _whole)
                for i in range(0, n, STEP):
                    self._dispatch_columns(cols.take(slice(i, i + STEP)))
            return cast("list[BadEvent]", bad)

    def send_arrow(self, batch: Any, timestamps: Any = None) -> list[BadEvent]:
        """`send_columns` of a pyarrow RecordBatch or Table (column names = attributes)."""
        return self.send_columns(batch, timestamps)

    def _dispatch_columns(self, cols: "Columns") -> None:
        sch = self.scheduler
        if not sch.playback:
            self.junction.process_columns(cols)
            return
        ts = cols.timestamps
        due = sch.next_due(skip_owner=self._owner())
        if due is not None and due <= int(ts.max()):  # timers inside the batch: rows
            self._dispatch(cols.events())
            return
        sch.set_clock(int(ts[0]))
        self.junction.process_columns(cols)
        sch.advance(int(ts[-1]))

    def _send(self, events: list[Any], validated: bool, now: int) -> list[BadEvent]:
        if validated:
            good, bad = [(t, r, 0) for t, r in events], []
        else:
            good, bad = self.coercer.coerce(events, now)
        if good:
            self._dispatch(good)
        return bad

    def _dispatch(self, events: list[Event]) -> None:
        sch = self.scheduler
        if not sch.playback:
            self.junction.process(events)
            return
        owner = self._owner()
        due = sch.next_due(skip_owner=owner)
        if due is None or due > events[-1][0] and due > max(map(_TS, events)):
            sch.set_clock(events[0][0])  # no timer falls inside the batch: one call
            self.junction.process(events)
            sch.advance(events[-1][0])
            return
        i, n = 0, len(events)
        latest = max(map(_TS, events))
        while i < n:
            due = sch.next_due(skip_owner=owner)
            if due is None or due > latest:
                sch.set_clock(events[i][0])
                self.junction.process(events[i:] if i else events)
                break
            j = i
            while j < n and events[j][0] < due:
                j += 1
            if j > i:
                sch.set_clock(events[i][0])
                self.junction.process(events[i:j])
            if j < n:
                sch.advance(events[j][0])
            i = j
        sch.advance(events[-1][0])


__all__ = ["StreamJunction", "InputHandler", "CallbackSink", "EventError"]
