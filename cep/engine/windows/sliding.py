"""Sliding windows: length, time, timeLength, externalTime, delay."""

from collections import deque

from cep.engine.windows.base import WindowProcessor
from cep.model import AttrType

_TS_TYPES = (AttrType.LONG, AttrType.INT)


def _positive(p, i, v):
    if v <= 0:
        p._fail(i, f"must be positive, got {v}")
    return v


class _QueueWindow(WindowProcessor):
    """A window whose whole state is one deque `q`, in arrival (or expiry) order."""

    def state_items(self):
        return {"q": list(self.q)}

    def load_state_items(self, s):
        self.q = deque(s["q"])


class LengthWindow(_QueueWindow):
    """The last n events; an arrival beyond n expires the oldest (expired before current)."""

    expires_arrivals = True

    @classmethod
    def parse(cls, p):
        p.count(1, 1)
        return (_positive(p, 0, p.int_const(0)),)

    def setup(self, n):
        self.n = n
        self.q = deque()

    def process(self, batch):
        q, n, out = self.q, self.n, []
        append, push, pop = out.append, q.append, q.popleft
        now, playback = self.clock(), self.env.playback
        for e in batch:
            if e[2]:
                continue
            if playback and e[0] > now:
                now = e[0]
            if len(q) >= n:
                append((now, pop()[1], 1))  # stamped with the plan clock
            push(e)
            append(e)
        self.emit(out)


class TimeWindow(_QueueWindow):
    """Events of the last T ms; an event at t is gone for anything at t + T (inclusive)."""

    expires_arrivals = True

    @classmethod
    def parse(cls, p):
        p.count(1, 1)
        return (_positive(p, 0, p.time(0)),)

    def setup(self, t):
        self.t = t
        self.q = deque()

    def process(self, batch):
        q, t, out = self.q, self.t, []
        append, push, pop = out.append, q.append, q.popleft
        now = self.clock()
        if self.env.playback:
            for e in batch:
                if e[2]:
                    continue
                if e[0] > now:
                    now = e[0]
                lim = now - t
                while q and q[0][0] <= lim:
                    append((now, pop()[1], 1))
                push(e)
                append(e)
        else:
            self._expire(now, append)
            for e in batch:
                if not e[2]:
                    push(e)
                    append(e)
        if q:
            self._schedule(self.late_due(q[0][0] + t))
        self.emit(out)

    def _expire(self, now, append):
        q, lim = self.q, now - self.t
        while q and q[0][0] <= lim:
            append((now, q.popleft()[1], 1))

    def on_timer(self, now):
        out = []
        self._expire(now, out.append)
        if self.q:
            self._schedule(self.late_due(self.q[0][0] + self.t))
        self.emit(out)


class TimeLengthWindow(TimeWindow):
    """At most n events of the last T ms."""

    @classmethod
    def parse(cls, p):
        p.count(2, 2)
        return (_positive(p, 0, p.time(0)), _positive(p, 1, p.int_const(1)))

    def setup(self, t, n):
        super().setup(t)
        self.n = n

    def process(self, batch):
        q, t, n, out = self.q, self.t, self.n, []
        append, push, pop = out.append, q.append, q.popleft
        now, playback = self.clock(), self.env.playback
        for e in batch:
            if e[2]:
                continue
            if playback and e[0] > now:
                now = e[0]
            lim = now - t
            while q and q[0][0] <= lim:
                append((now, pop()[1], 1))
            if len(q) >= n:
                append((now, pop()[1], 1))
            push(e)
            append(e)
        if q:
            self._schedule(self.late_due(q[0][0] + t))
        self.emit(out)


class ExternalTimeWindow(_QueueWindow):
    """Sliding over a timestamp attribute; expired events carry the triggering event's value.

    As a join side probed by the other side, Siddhi 3.2's window is left with its expiry
    iterator at the end (the join's find walks the same chunk and the window resets it only
    after its expiry loop): the next arrival expires nothing, the one after catches up. That
    is reproduced by default (`probed`); `@Plan:siddhi('fixed')` expires on every arrival."""

    expires_arrivals = True

    @classmethod
    def parse(cls, p):
        p.count(2, 2)
        return (p.getter(0, _TS_TYPES), _positive(p, 1, p.time(1)))

    def setup(self, get, t):
        self.get, self.t = get, t
        self.q = deque()  # (external ts, event)
        self.skip_expiry = False  # a join's probe left Siddhi's iterator at the end

    def probed(self):
        """The other side of a join looked into this window's rows."""
        if not self.env.fixed:
            self.skip_expiry = True

    def process(self, batch):
        q, t, get, out = self.q, self.t, self.get, []
        append = out.append
        for e in batch:
            if e[2]:
                continue
            ext = get(e[1])
            lim = ext - t
            if self.skip_expiry:
                self.skip_expiry = False
            else:
                while q and q[0][0] <= lim:
                    append((ext, q.popleft()[1][1], 1))
            q.append((ext, e))
            append(e)
        self.emit(out)

    def state_items(self):
        return {"q": list(self.q), "skip": self.skip_expiry}

    def load_state_items(self, s):
        self.q, self.skip_expiry = deque(s["q"]), bool(s.get("skip", False))


class DelayWindow(TimeWindow):
    """Holds each event for T ms, then lets it through as a current event stamped then."""

    def process(self, batch):
        q, t, out = self.q, self.t, []
        append = out.append
        now, playback = self.clock(), self.env.playback
        for e in batch:
            if e[2]:
                continue
            if playback and e[0] > now:
                now = e[0]
            lim = now - t
            while q and q[0][0] <= lim:
                append((now, q.popleft()[1], 0))
            q.append(e)
        if q:
            self._schedule(self.late_due(q[0][0] + t))
        self.emit(out)

    def _expire(self, now, append):
        q, lim = self.q, now - self.t
        while q and q[0][0] <= lim:
            append((now, q.popleft()[1], 0))
