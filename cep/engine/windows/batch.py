"""Batch windows: lengthBatch, timeBatch, externalTimeBatch, uniqueExternalTimeBatch.

Each flush goes on as its own batch: the previous batch as EXPIRED events (stamped with the
flush time), a RESET event, then the new batch's events with their own timestamps.

Siddhi 3.2 quirk, kept by default: lengthBatch, timeBatch and cron stamp the expired events by
walking their chunk from its iterator's position, which a join's probe (`find`) leaves at the
end; so once the other side of a join has probed the batch since the last flush, its events
expire with their own timestamps. A probe calls `probed()`; `@Plan:siddhi('fixed')` always
stamps the flush time."""

from cep.engine.windows.base import WindowProcessor
from cep.engine.windows.sliding import _TS_TYPES, _positive


class BatchWindow(WindowProcessor):
    is_batch = True
    probe_keeps_stamps = True  # Siddhi 3.2's quirk applies (see the module docstring)
    # a columnar kernel (cep.engine.columnar.batchwin) holding `cur` and `prev` as columns;
    # `_rows()` turns them back into the lists before anything here reads them
    lazy = None

    def setup(self, *args):
        self.cur = []
        self.prev = []
        self.was_probed = False

    def _rows(self):
        if self.lazy is not None:
            self.lazy.materialise(self)

    def probed(self):
        """A join probed the rows of the last flush (they keep their stamps on expiry)."""
        self._rows()
        if self.prev and self.probe_keeps_stamps and not self.env.fixed:
            self.was_probed = True

    def flush(self, now):
        self._rows()
        prev, cur = self.prev, self._current_events()
        if not prev and not cur:
            return
        if self.was_probed:
            chunk = [(ts, r, 1) for ts, r, _ in prev]
            self.was_probed = False
        else:
            chunk = [(now, r, 1) for _, r, _ in prev]
        if cur:
            chunk.append((now, None, 2))
            chunk.extend(cur)
        self.prev = cur
        self._clear_current()
        self.emit_at(now, chunk)

    def _current_events(self):
        self._rows()
        return self.cur

    def _clear_current(self):
        self.cur = []

    def state_items(self):
        self._rows()
        return {"cur": self.cur, "prev": self.prev, "probed": self.was_probed}

    def load_state_items(self, s):
        self.lazy = None
        self.cur, self.prev = list(s["cur"]), list(s["prev"])
        self.was_probed = s.get("probed", False)


class LengthBatchWindow(BatchWindow):
    """Flushes every n events."""

    @classmethod
    def parse(cls, p):
        p.count(1, 1)
        return (_positive(p, 0, p.int_const(0)),)

    def setup(self, n):
        super().setup()
        self.n = n

    def process(self, batch):
        n = self.n
        now, playback = self.clock(), self.env.playback
        for e in batch:
            if e[2]:
                continue
            if playback and e[0] > now:
                now = e[0]
            self.cur.append(e)
            if len(self.cur) >= n:
                self.flush(now)


class TimeBatchWindow(BatchWindow):
    """Flushes every T ms; the first period starts at the first event, or on `start` mod T."""

    @classmethod
    def parse(cls, p):
        p.count(1, 2)
        start = p.int_const(1) if len(p) > 1 else None
        return (_positive(p, 0, p.time(0)), start)

    def setup(self, t, start):
        super().setup()
        self.t, self.start = t, start
        self.next_emit = None

    def _first_emit(self, now):
        if self.start is None:
            return now + self.t
        gap = now - self.start
        if gap < 0 and not self.env.fixed:
            # Siddhi 3.2 takes Java's remainder (sign of the dividend): before the start time
            # the first flush comes a whole period later than the next aligned time
            return now + (self.t + (-gap) % self.t)
        return now + (self.t - gap % self.t)

    def process(self, batch):
        now, playback = self.clock(), self.env.playback
        for e in batch:
            if e[2]:
                continue
            if playback and e[0] > now:
                now = e[0]
            if self.next_emit is None:
                self.next_emit = self._first_emit(now)
            elif now >= self.next_emit:
                self._flush_due(now)
            self.cur.append(e)
        if self.next_emit is not None:
            self._schedule(self.next_emit)

    def _flush_due(self, now):
        t = self.t
        while self.next_emit <= now:
            self.flush(now)
            self.next_emit += t
            if not self.cur and not self.prev and self.next_emit <= now:
                self.next_emit += t * ((now - self.next_emit) // t + 1)

    def on_timer(self, now):
        if self.next_emit is not None and now >= self.next_emit:
            self._flush_due(now)
        if self.next_emit is not None:
            self._schedule(self.next_emit)

    def state_items(self):
        return {**super().state_items(), "next_emit": self.next_emit}

    def load_state_items(self, s):
        super().load_state_items(s)
        self.next_emit = s["next_emit"]


class ExternalTimeBatchWindow(BatchWindow):
    """Batches cut by a timestamp attribute; a batch flushes when an event past its end comes.
    (Siddhi rewinds its expired chunk before stamping it: no probe quirk.)

    With a `timeout`, a batch that gets no new event for that long (on the runtime's clock)
    is output early, as a preview; its events stay in the batch, which is output again, whole,
    when it ends (WSO2's documented behaviour)."""

    @classmethod
    def parse(cls, p):
        p.count(2, 4)
        start = p.int_const(2) if len(p) > 2 else None
        timeout = p.time(3) if len(p) > 3 else None
        return (p.getter(0, _TS_TYPES), _positive(p, 1, p.time(1)), start, timeout)

    def setup(self, get, t, start, timeout):
        super().setup()
        self.get, self.t, self.start, self.timeout = get, t, start, timeout
        self.end = None

    probe_keeps_stamps = False

    def process(self, batch):
        get, t = self.get, self.t
        pending = self._timer_due if self.timeout is not None and self.env.playback else None
        for e in batch:
            if e[2]:
                continue
            if pending is not None and e[0] >= pending:  # the wait ran out before e came
                pending = self._timer_due = None
                self.on_timer(e[0])
            ext = get(e[1])
            if self.end is None:
                base = ext if self.start is None else (self.start + ((ext - self.start) // t) * t)
                self.end = base + t
            elif ext >= self.end:
                self.flush(ext)
                self.end += t * ((ext - self.end) // t + 1)
            self._add(e)
            last = e[0]
            if self.timeout is not None and self.env.playback:
                pending = last + self.timeout
        if self.timeout is not None and self._current_events():
            arrival = last if self.env.playback else self.now()
            self._timer_due = None  # each arrival restarts the wait
            self._schedule(arrival + self.timeout, owned=False)

    def on_timer(self, now):
        cur = self._current_events()
        if self.timeout is not None and cur:
            self.next.process([(now, None, 2)] + list(cur))

    def _add(self, e):
        self.cur.append(e)

    def state_items(self):
        return {**super().state_items(), "end": self.end}

    def load_state_items(self, s):
        super().load_state_items(s)
        self.end = s["end"]


class UniqueExternalTimeBatchWindow(ExternalTimeBatchWindow):
    """externalTimeBatch keeping only the latest event per unique key within a batch."""

    @classmethod
    def parse(cls, p):
        p.count(3, 5)
        start = p.int_const(3) if len(p) > 3 else None
        timeout = p.time(4) if len(p) > 4 else None
        return (p.getter(0), p.getter(1, _TS_TYPES), _positive(p, 2, p.time(2)), start, timeout)

    def setup(self, key, get, t, start, timeout):
        super().setup(get, t, start, timeout)
        self.key = key
        self.cur = {}

    def _add(self, e):
        self.cur[self.key(e[1])] = e

    def _current_events(self):
        return list(self.cur.values())

    def _clear_current(self):
        self.cur = {}

    def state_items(self):
        return {**super().state_items(), "cur": dict(self.cur)}

    def load_state_items(self, s):
        super().load_state_items(s)
        self.cur = dict(s["cur"])


class CronWindow(TimeBatchWindow):
    """Flushes at the times of a cron expression ('0/5 * * * * ?': every 5 seconds)."""

    @classmethod
    def parse(cls, p):
        p.count(1, 1)
        from cep.engine.trigger import Cron

        return (Cron(p.str_const(0), p.params[0].span),)

    def setup(self, cron):
        BatchWindow.setup(self)
        self.cron = cron
        self.next_emit = None

    def _first_emit(self, now):
        return self.cron.next_after(now)

    def _flush_due(self, now):
        while self.next_emit <= now:
            self.flush(now)
            self.next_emit = self.cron.next_after(
                self.next_emit if (self.cur or self.prev) else now
            )
