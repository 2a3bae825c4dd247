"""Output rate limiting: `output [all|first|last] every N events | every T` and
`output snapshot every T`, as processors between the selector and the output.

Event-count limiters count every output event (current and expired alike). Time limiters tick
every T on the scheduler: on event time in playback (the first period starts with the first
event), on the wall clock otherwise. With group by, `first` and `last` work per group (the
group key is read from the output attributes named in `group by`)."""

from cep.engine.events import CURRENT, EXPIRED
from cep.engine.processor import Processor


class RateLimiter(Processor):
    stateful = True
    # of a time limiter's timers: Siddhi 3.2 creates their schedulers when the plan starts,
    # after every window's (cep.engine.clock)
    rank = ()

    def __init__(self, value, key=None, scheduler=None):
        super().__init__()
        self.value, self.key, self.scheduler = value, key, scheduler
        self.reset_state()

    def reset_state(self):
        pass

    def clone(self):
        c = type(self)(self.value, self.key, self.scheduler)
        c.rank = self.rank
        return c

    def get_state(self):
        return {k: v for k, v in self.__dict__.items() if k.startswith("s_")}

    def set_state(self, state):
        self.__dict__.update(state)


class AllEveryEvents(RateLimiter):
    """Releases the buffered events every N events."""

    def reset_state(self):
        self.s_buf = []

    def process(self, batch):
        buf = self.s_buf
        buf.extend(batch)
        n = self.value
        if len(buf) >= n:
            cut = len(buf) // n * n
            out, self.s_buf = buf[:cut], buf[cut:]
            self.next.process(out)


class FirstEveryEvents(RateLimiter):
    """The first event of each N-event period, at once. With group by (Siddhi 3.2), each
    group's first event of the period is held and all of them are released at the period's
    N-th event; a period that never completes releases nothing."""

    def reset_state(self):
        self.s_count, self.s_seen, self.s_held = 0, set(), []

    def process(self, batch):
        out, n, key = [], self.value, self.key
        for e in batch:
            if key is None:
                if self.s_count == 0:
                    out.append(e)
            else:
                k = key(e[1])
                if k not in self.s_seen:
                    self.s_seen.add(k)
                    self.s_held.append(e)
            self.s_count += 1
            if self.s_count >= n:
                out.extend(self.s_held)
                self.s_count, self.s_seen, self.s_held = 0, set(), []
        self.emit(out)


class LastEveryEvents(RateLimiter):
    """The last event (per group, in first-appearance order) of each N-event period."""

    def reset_state(self):
        self.s_count, self.s_last = 0, {}

    def process(self, batch):
        out, n, key = [], self.value, self.key
        for e in batch:
            self.s_last[None if key is None else key(e[1])] = e
            self.s_count += 1
            if self.s_count >= n:
                out.extend(self.s_last.values())
                self.s_count, self.s_last = 0, {}
        self.emit(out)


class TimeLimiter(RateLimiter):
    """Base of the time-based limiters: a tick every T from the first event on. In playback an
    event at or past the next tick first runs the tick inline (as the scheduler would have,
    had the timer existed when the batch was split)."""

    def reset_state(self):
        self.s_next_tick = None

    def _arm(self):
        due = self.s_next_tick
        self.scheduler.notify_at(due, self._fire(due), rank=self.rank)

    def _fire(self, due):
        def fire(now):
            if self.s_next_tick == due:
                self._run_ticks(now)

        return fire

    def _run_ticks(self, now):
        while self.s_next_tick <= now:
            self.s_next_tick += self.value
            self.on_tick(now)
        self._arm()

    def process(self, batch):
        sch = self.scheduler
        if not sch.playback:
            if self.s_next_tick is None:
                self.s_next_tick = sch.now() + self.value
                self._arm()
            self.collect(batch)
            return
        if self.s_next_tick is None:
            self.s_next_tick = batch[0][0] + self.value
            self._arm()
        i, n = 0, len(batch)
        while i < n:
            j, tick = i, self.s_next_tick
            while j < n and batch[j][0] < tick:
                j += 1
            if j > i:
                self.collect(batch[i:j] if (i or j < n) else batch)
            if j < n:
                self._run_ticks(batch[j][0])
            i = j

    def set_state(self, state):
        super().set_state(state)
        if self.s_next_tick is not None:
            self._arm()


class AllEveryTime(TimeLimiter):
    def reset_state(self):
        super().reset_state()
        self.s_buf = []

    def collect(self, batch):
        self.s_buf.extend(batch)

    def on_tick(self, now):
        out, self.s_buf = self.s_buf, []
        self.emit(out)


class FirstEveryTime(TimeLimiter):
    """The first event of each period, at once. With group by (as Siddhi's
    FirstGroupByPerTimeOutputRateLimiter), each group's first event of the period is held and
    all of them are released when the period ends."""

    def reset_state(self):
        super().reset_state()
        self.s_seen, self.s_held = set(), []

    def collect(self, batch):
        out, key = [], self.key
        for e in batch:
            k = None if key is None else key(e[1])
            if k not in self.s_seen:
                self.s_seen.add(k)
                out.append(e)
        if key is None:
            self.emit(out)
        else:
            self.s_held.extend(out)

    def on_tick(self, now):
        out, self.s_seen, self.s_held = self.s_held, set(), []
        self.emit(out)


class LastEveryTime(TimeLimiter):
    def reset_state(self):
        super().reset_state()
        self.s_last = {}

    def collect(self, batch):
        key = self.key
        for e in batch:
            self.s_last[None if key is None else key(e[1])] = e

    def on_tick(self, now):
        out, self.s_last = list(self.s_last.values()), {}
        self.emit(out)


class SnapshotEveryTime(TimeLimiter):
    """Every T, the current state: the rows in the window (windowed, no aggregates), else the
    latest row (per group)."""

    def __init__(self, value, key=None, scheduler=None, windowed=False, aggregating=False):
        self.windowed, self.aggregating = windowed, aggregating
        super().__init__(value, key, scheduler)

    def clone(self):
        c = SnapshotEveryTime(self.value, self.key, self.scheduler, self.windowed, self.aggregating)
        c.rank = self.rank
        return c

    def reset_state(self):
        super().reset_state()
        self.s_rows = []
        self.s_last = {}

    def collect(self, batch):
        if self.windowed and not self.aggregating:
            rows = self.s_rows
            for e in batch:
                if e[2] == CURRENT:
                    rows.append(e)
                elif e[2] == EXPIRED:
                    for i, x in enumerate(rows):
                        if x[1] == e[1]:
                            del rows[i]
                            break
            return
        key = self.key
        for e in batch:
            self.s_last[None if key is None else key(e[1])] = (e[0], e[1], CURRENT)

    def on_tick(self, now):
        if self.windowed and not self.aggregating:
            self.emit(list(self.s_rows))
        else:
            self.emit(list(self.s_last.values()))


def build_rate_limiter(rate, key, scheduler, windowed, aggregating):
    """The limiter for a model `OutputRate`."""
    if rate.kind == "events":
        cls = {"all": AllEveryEvents, "first": FirstEveryEvents, "last": LastEveryEvents}
        return cls[rate.mode](rate.value, key)
    if rate.kind == "time":
        cls = {"all": AllEveryTime, "first": FirstEveryTime, "last": LastEveryTime}
        limiter = cls[rate.mode](rate.value, key, scheduler)
    else:
        limiter = SnapshotEveryTime(rate.value, key, scheduler, windowed, aggregating)
    limiter.rank = scheduler.new_rank(1)
    return limiter
