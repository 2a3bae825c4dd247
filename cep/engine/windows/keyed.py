"""Windows that keep events by key or order: sort, unique, firstUnique, frequent, lossyFrequent."""

import math
from bisect import bisect_right

from cep.engine.windows.base import WindowProcessor


class _Desc:
    """Reverses the order of a sort key component."""

    __slots__ = ("v",)

    def __init__(self, v):
        self.v = v

    def __lt__(self, other):
        return other.v < self.v

    def __eq__(self, other):
        return self.v == other.v


def _key_of(getters):
    if len(getters) == 1:
        return getters[0]

    def key(r):
        return tuple(g(r) for g in getters)

    return key


def _attr_getters(p, first):
    if len(p) <= first:
        return [lambda r: r]
    return [p.getter(i) for i in range(first, len(p))]


class SortWindow(WindowProcessor):
    """Keeps the n first events in sort order; an arrival beyond n expires the last one
    (current first, then expired; a newcomer that sorts last expires at once)."""

    expires_arrivals = True

    @classmethod
    def parse(cls, p):
        p.count(2)
        n = p.int_const(0)
        parts, i = [], 1
        while i < len(p):
            get = p.getter(i)
            asc = True
            if i + 1 < len(p) and p.is_const(i + 1):
                order = p.str_const(i + 1).lower()
                if order not in ("asc", "desc"):
                    p._fail(i + 1, f"must be 'asc' or 'desc', got '{order}'")
                asc = order == "asc"
                i += 1
            parts.append((get, asc))
            i += 1
        return (n, tuple(parts))

    def setup(self, n, parts):
        self.n = n

        def make_key(exact):
            """The sort key of an event; with `exact`, None when a value is NaN (no total
            order: only a full sort then places it as the sort always did)."""

            def key(e):
                r = e[1]
                out = []
                for get, asc in parts:
                    v = get(r)
                    if exact and v != v:
                        return None
                    c = (v is not None, v)
                    out.append(c if asc else _Desc(c))
                return tuple(out)

            return key

        self.key, self.exact_key = make_key(False), make_key(True)
        self.items = []
        self.keys = None  # the items' keys while the items are known to be sorted

    def process(self, batch):
        items, n, key, out = self.items, self.n, self.key, []
        keys, exact_key = self.keys, self.exact_key
        now, playback = self.clock(), self.env.playback
        for e in batch:
            if e[2]:
                continue
            if playback and e[0] > now:
                now = e[0]
            out.append(e)
            if keys is not None:
                # sorted and full: a stable sort of the items plus the newcomer puts it after
                # every equal key, where bisect_right does; the last one then expires
                k = exact_key(e)
                if k is not None:
                    i = bisect_right(keys, k)
                    if i < n:
                        items.insert(i, e)
                        keys.insert(i, k)
                        keys.pop()
                        e = items.pop()
                    out.append((now, e[1], 1))
                    continue
                keys = None
            items.append(e)  # Siddhi 3.2 sorts only when the window is over its size
            if len(items) > n:
                items.sort(key=key)  # stable: ties keep their order, as Collections.sort
                out.append((now, items.pop()[1], 1))
                known = [exact_key(x) for x in items]
                keys = known if len(items) == n and None not in known else None
        self.keys = keys
        self.emit(out)

    def join_rows(self):
        """The rows in the order Siddhi's join meets them: as last sorted (on the last
        eviction), arrivals since then after them."""
        return [e[1] for e in self.items]

    def state_items(self):
        return {"items": list(self.items)}

    def load_state_items(self, s):
        self.items = list(s["items"])
        self.keys = None


class UniqueWindow(WindowProcessor):
    """The latest event per key; a newcomer expires the event it replaces (expired first)."""

    expires_arrivals = True
    # a columnar kernel (cep.engine.columnar.uniquewin) holding the newest events per key
    # as positions in its batches; `_rows()` writes them into the map before it is read
    lazy = None

    @classmethod
    def parse(cls, p):
        p.count(1)
        return (_key_of(_attr_getters(p, 0)),)

    def setup(self, key):
        self.key = key
        self.map = {}

    def _rows(self):
        if self.lazy is not None:
            self.lazy.materialise(self)

    def process(self, batch):
        self._rows()
        m, key, out = self.map, self.key, []
        now, playback = self.clock(), self.env.playback
        for e in batch:
            if e[2]:
                continue
            if playback and e[0] > now:
                now = e[0]
            k = key(e[1])
            old = m.get(k)
            m[k] = e
            if old is not None:
                out.append((now, old[1], 1))
            out.append(e)
        self.emit(out)

    def state_items(self):
        self._rows()
        return {"map": dict(self.map)}

    def load_state_items(self, s):
        self.lazy = None
        self.map = dict(s["map"])


class FirstUniqueWindow(UniqueWindow):
    """The first event per key; later events with a known key are dropped."""

    def process(self, batch):
        m, key, out = self.map, self.key, []
        for e in batch:
            if e[2]:
                continue
            k = key(e[1])
            if k not in m:
                m[k] = e
                out.append(e)
        self.emit(out)


class FrequentWindow(WindowProcessor):
    """Events of the n most frequent keys (Misra-Gries counting, as Siddhi 3)."""

    @classmethod
    def parse(cls, p):
        p.count(1)
        return (p.int_const(0), _key_of(_attr_getters(p, 1)))

    def setup(self, n, key):
        self.n, self.key = n, key
        self.map, self.counts = {}, {}

    def process(self, batch):
        out = []
        now, playback = self.clock(), self.env.playback
        for e in batch:
            if not e[2]:
                if playback and e[0] > now:
                    now = e[0]
                self._one(e, now, out)
        self.emit(out)

    def _one(self, e, now, out):
        m, counts, k = self.map, self.counts, self.key(e[1])
        if k in m:
            m[k] = e
            counts[k] += 1
            out.append(e)
            return
        m[k] = e
        if len(m) <= self.n:
            counts[k] = 1
            out.append(e)
            return
        for ck in list(counts)[: self.n]:
            c = counts[ck] - 1
            if c == 0:
                del counts[ck]
                out.append((now, m.pop(ck)[1], 1))
            else:
                counts[ck] = c
        if len(m) > self.n:
            del m[k]
        else:
            counts[k] = 1
            out.append(e)

    def state_items(self):
        return {"map": dict(self.map), "counts": dict(self.counts)}

    def load_state_items(self, s):
        self.map, self.counts = dict(s["map"]), dict(s["counts"])


class LossyFrequentWindow(WindowProcessor):
    """Events whose key's frequency is at least support - error (lossy counting). It keeps
    one event per key; in Siddhi 3.2 a newer event of a kept key replaces it without emitting
    the old one as EXPIRED (aggregates then count every event of a repeated key), a bug that
    `@Plan:siddhi('fixed')` fixes by expiring the replaced event, as `frequent` does."""

    @classmethod
    def parse(cls, p):
        p.count(1)
        support = p.float_const(0)
        i, error = 1, support / 10
        if len(p) > 1 and p.is_const(1):
            error, i = p.float_const(1), 2
        return (support, error, _key_of(_attr_getters(p, i)))

    def setup(self, support, error, key):
        self.support, self.error, self.key = support, error, key
        self.width = math.ceil(1 / error)
        self.map, self.counts, self.total, self.bucket = {}, {}, 0, 1

    def process(self, batch):
        out = []
        now, playback = self.clock(), self.env.playback
        for e in batch:
            if not e[2]:
                if playback and e[0] > now:
                    now = e[0]
                self._one(e, now, out)
        self.emit(out)

    def _one(self, e, now, out):
        self.total += 1
        if self.total != 1:
            self.bucket = math.ceil(self.total / self.width)
        k = self.key(e[1])
        old = self.map.get(k)
        self.map[k] = e
        c = self.counts.get(k)
        if c is None:
            c = self.counts[k] = [0, self.bucket - 1]
        c[0] += 1
        if c[0] + c[1] >= (self.support - self.error) * self.total:
            if old is not None and self.env.fixed:
                out.append((now, old[1], 1))
            out.append(e)
        if self.total % self.width == 0:
            for ck in [x for x, (n, b) in self.counts.items() if n + b <= self.bucket]:
                del self.counts[ck]
                ev = self.map.pop(ck, None)
                if ev is not None:
                    out.append((now, ev[1], 1))

    def state_items(self):
        return {
            "map": dict(self.map),
            "counts": {k: list(v) for k, v in self.counts.items()},
            "total": self.total,
            "bucket": self.bucket,
        }

    def load_state_items(self, s):
        self.map, self.counts = dict(s["map"]), {k: list(v) for k, v in s["counts"].items()}
        self.total, self.bucket = s["total"], s["bucket"]
