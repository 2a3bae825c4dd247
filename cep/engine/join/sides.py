"""The two inputs of a join: a window (or none, or a table) that keeps rows to probe against.

A side's `arrive(ts, row)` returns what its window emits for that event, Siddhi-style: rows
evicted by it first (EXPIRED, stamped with the arriving event's time), then the event itself
(CURRENT). `expire(now)` is the timer path of time windows. `candidates(key)` are the rows a
probe from the other side looks at, in window order: with a `key` function (from an equality
in the `on` condition) only the rows with that key, from a dict of deques.
"""
from collections import deque

from cep.errors import InvalidQueryError

CURRENT, EXPIRED = 0, 1


class Side:
    """No window: events probe the other side but are never kept."""
    triggers_timer = False

    def __init__(self, key=None):
        self.key = key
        self.rows = deque()  # (ts, row) in window order
        self.index = {} if key is not None else None

    def arrive(self, ts, row):
        return [(ts, row, CURRENT)]

    def expire(self, now):
        return []

    def next_due(self):
        return None

    def candidates(self, key_value=None, use_key=False):
        if use_key and self.index is not None:
            return self.index.get(key_value, ())
        return [r for _, r in self.rows]

    # -- contents ------------------------------------------------------------------------
    def _add(self, ts, row):
        self.rows.append((ts, row))
        if self.index is not None:
            k = self.key(row)
            bucket = self.index.get(k)
            if bucket is None:
                self.index[k] = deque((row,))
            else:
                bucket.append(row)

    def _pop_oldest(self):
        ts, row = self.rows.popleft()
        if self.index is not None:
            k = self.key(row)
            bucket = self.index[k]
            bucket.popleft()
            if not bucket:
                del self.index[k]
        return ts, row

    def _replace_all(self, items):
        self.rows = deque(items)
        if self.index is not None:
            self.index = {}
            for _, row in items:
                self.index.setdefault(self.key(row), deque()).append(row)

    def get_state(self):
        return list(self.rows)

    def set_state(self, state):
        self._replace_all(state)

    def fresh(self):
        """An empty side with the same configuration."""
        return type(self)(key=self.key)


class LengthSide(Side):
    def __init__(self, length, key=None):
        super().__init__(key)
        self.length = length

    def arrive(self, ts, row):
        out = []
        if len(self.rows) >= self.length:
            _, old = self._pop_oldest()
            out.append((ts, old, EXPIRED))
        if self.length > 0:
            self._add(ts, row)
        else:
            out.append((ts, row, EXPIRED))
        out.append((ts, row, CURRENT))
        return out

    def fresh(self):
        return LengthSide(self.length, self.key)


class TimeSide(Side):
    """time(T): an event is gone once now >= its time + T (expiry is inclusive)."""
    triggers_timer = True

    def __init__(self, millis, key=None):
        super().__init__(key)
        self.millis = millis

    def expire(self, now):
        out = []
        limit = now - self.millis
        while self.rows and self.rows[0][0] <= limit:
            _, old = self._pop_oldest()
            out.append((now, old, EXPIRED))
        return out

    def arrive(self, ts, row):
        out = self.expire(ts)
        self._add(ts, row)
        out.append((ts, row, CURRENT))
        return out

    def next_due(self):
        return self.rows[0][0] + self.millis if self.rows else None

    def fresh(self):
        return TimeSide(self.millis, self.key)


class LengthBatchSide(Side):
    """lengthBatch(n): rows collect unseen; every n-th arrival releases them together."""

    def __init__(self, length, key=None):
        super().__init__(key)
        self.length = length
        self.collecting = []

    def arrive(self, ts, row):
        self.collecting.append((ts, row))
        if len(self.collecting) < self.length:
            return []
        out = [(ts, r, EXPIRED) for _, r in self.rows]
        out.extend((t, r, CURRENT) for t, r in self.collecting)
        self._replace_all(self.collecting)
        self.collecting = []
        return out

    def get_state(self):
        return {"rows": list(self.rows), "collecting": list(self.collecting)}

    def set_state(self, state):
        self._replace_all(state["rows"])
        self.collecting = list(state["collecting"])

    def fresh(self):
        return LengthBatchSide(self.length, self.key)


class TimeBatchSide(LengthBatchSide):
    """timeBatch(T): rows collect unseen and are released together every T ms."""
    triggers_timer = True

    def __init__(self, millis, key=None):
        super().__init__(0, key)
        self.millis = millis
        self.due = None

    def arrive(self, ts, row):
        out = self.expire(ts)
        if self.due is None:
            self.due = ts + self.millis
        self.collecting.append((ts, row))
        return out

    def expire(self, now):
        out = []
        while self.due is not None and now >= self.due:
            out.extend((now, r, EXPIRED) for _, r in self.rows)
            out.extend((t, r, CURRENT) for t, r in self.collecting)
            self._replace_all(self.collecting)
            self.collecting = []
            self.due = self.due + self.millis if self.rows else None
        return out

    def next_due(self):
        return self.due

    def get_state(self):
        return {"rows": list(self.rows), "collecting": list(self.collecting), "due": self.due}

    def set_state(self, state):
        super().set_state(state)
        self.due = state["due"]

    def fresh(self):
        return TimeBatchSide(self.millis, self.key)


def make_side(window, params, key=None):
    """The side for `#window.name(params)` (params already evaluated to Python values)."""
    if window is None:
        return Side(key)
    name = window.name
    makers = {"length": LengthSide, "time": TimeSide, "lengthBatch": LengthBatchSide,
              "timeBatch": TimeBatchSide}
    if name not in makers or window.namespace:
        raise InvalidQueryError(
            f"window '{name}' cannot be used on a join side (supported: "
            f"{', '.join(sorted(makers))})", window.span)
    if len(params) != 1 or not isinstance(params[0], int) or isinstance(params[0], bool):
        raise InvalidQueryError(f"window {name}() on a join side takes one int/time parameter",
                                window.span)
    return makers[name](params[0], key)
