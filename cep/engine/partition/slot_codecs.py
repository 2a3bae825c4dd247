"""How the slot form of a partition (slots.py) stores each processor's per-key state: one
codec per stateful processor of the working instance, saving a key's state into slot storage
shared by every key and loading it back; and how a failure on a key's events is counted. The
generated loops of slot_driver.py read the same storage."""

from __future__ import annotations

from array import array
from typing import Any, Callable

from cep.engine.junction import log
from cep.engine.windows.batch import LengthBatchWindow


class Codec:
    """Moves one stateful processor's state between the working instance and slot storage."""

    def new(self) -> None:
        """Add storage for one more slot, holding a fresh (empty) state."""
        raise NotImplementedError

    def reset(self, slot: int) -> None:
        """Give a freed slot a fresh state again (for reuse after a purge)."""
        raise NotImplementedError

    def load(self, slot: int) -> None:
        raise NotImplementedError

    def save(self, slot: int) -> None:
        raise NotImplementedError


class _RingCodec(Codec):
    """A length window's deque (`attr`), as `n` references per slot in one flat list used as
    a ring. `state[slot]` is the fill while the window fills (0..n-1), and n + the position
    of the oldest event once it is full (n..2n-1): one small int a key."""

    def __init__(self, proc: Any, attr: str, n: int) -> None:
        self.p, self.attr, self.n = proc, attr, n
        self.events: list = []
        self.state: list = []

    def new(self) -> None:
        self.events.extend((None,) * self.n)
        self.state.append(0)

    def reset(self, slot: int) -> None:
        b = slot * self.n
        self.events[b : b + self.n] = (None,) * self.n
        self.state[slot] = 0

    def load(self, slot: int) -> None:
        dq = getattr(self.p, self.attr)
        dq.clear()
        f, n, b = self.state[slot], self.n, slot * self.n
        if f < n:
            dq.extend(self.events[b : b + f])
        else:
            h = b + f - n
            dq.extend(self.events[h : b + n])
            dq.extend(self.events[b:h])

    def save(self, slot: int) -> None:
        dq = getattr(self.p, self.attr)
        m, n = len(dq), self.n
        if m > n:
            raise AssertionError(f"length window holds {m} events, more than {n}")
        b = slot * n
        self.events[b : b + m] = dq
        self.events[b + m : b + n] = (None,) * (n - m)  # no stale references
        self.state[slot] = m if m < n else n


class _ValuesCodec(Codec):
    """A non-grouped aggregating selector's state list: one column per value, across slots.
    A value that starts as a float (a running sum) sits in an array of C doubles, 8 bytes a
    key instead of a reference and a float object; the column turns into a list if a value
    of another type ever comes (doubles keep every bit: signed zeros, infinities, NaN)."""

    def __init__(self, proc: Any, init: Callable[[], list]) -> None:
        self.p, self.init = proc, init
        self.work = init()
        self.columns: list = [array("d") if type(v) is float else [] for v in self.work]

    def new(self) -> None:
        for c, v in zip(self.columns, self.init()):
            c.append(v)

    def reset(self, slot: int) -> None:
        for i, v in enumerate(self.init()):
            self._put(i, slot, v)

    def _put(self, i: int, slot: int, v: Any) -> None:
        c = self.columns[i]
        if type(c) is array and type(v) is not float:
            c = self.columns[i] = list(c)
        c[slot] = v

    def load(self, slot: int) -> None:
        w = self.work
        self.p.state = w
        for i, c in enumerate(self.columns):
            w[i] = c[slot]

    def save(self, slot: int) -> None:
        for i, v in enumerate(self.p.state):
            c = self.columns[i]
            if type(c) is array and type(v) is not float:
                c = self.columns[i] = list(c)
            c[slot] = v


class _ObjectCodec(Codec):
    """One state object per slot (a grouped selector's dict), swapped in and out."""

    def __init__(self, proc: Any, attr: str, init: Callable[[], Any]) -> None:
        self.p, self.attr, self.init = proc, attr, init
        self.objects: list = []

    def new(self) -> None:
        self.objects.append(self.init())

    def reset(self, slot: int) -> None:
        self.objects[slot] = self.init()

    def load(self, slot: int) -> None:
        setattr(self.p, self.attr, self.objects[slot])

    def save(self, slot: int) -> None:
        self.objects[slot] = getattr(self.p, self.attr)


class _BatchCodec(Codec):
    """A lengthBatch window's current and previous batch per slot (None when empty)."""

    def __init__(self, proc: LengthBatchWindow) -> None:
        self.p = proc
        self.cur: list = []
        self.prev: list = []

    def new(self) -> None:
        self.cur.append(None)
        self.prev.append(None)

    def reset(self, slot: int) -> None:
        self.cur[slot] = self.prev[slot] = None

    def load(self, slot: int) -> None:
        p = self.p
        p.cur = self.cur[slot] or []
        p.prev = self.prev[slot] or []

    def save(self, slot: int) -> None:
        p = self.p
        self.cur[slot] = p.cur or None
        self.prev[slot] = p.prev or None


def failed(junction: Any, events: list, exc: Exception) -> None:
    """A query's failure on a key's events, counted and logged as StreamJunction does."""
    junction.failed += len(events)
    log.error(
        "stream '%s': an event failed in a query and was dropped (%d so far): %s",
        junction.definition.id,
        junction.failed,
        exc,
    )
