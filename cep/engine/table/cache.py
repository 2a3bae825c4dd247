"""The result cache of an external table, with Siddhi's cache options: `cache='basic'`
(first in, first out), `'LRU'` (least recently used out) or `'LFU'` (least frequently used
out), holding at most `cache.size` entries.

An entry is the rows one probe found for one set of event values. Any write through the table
clears the cache, so a cached read never misses the table's own inserts, updates and deletes
(writes by other programs to the database are seen once their entries are evicted or the
table writes). With `cache.validity.period`, an entry older than that is read again from the
database: the way to see writes by other execution groups or programs within a bound."""

import time
from collections import OrderedDict


class ResultCache:
    def __init__(self, policy: str, size: int, validity_ms=None, clock=time.monotonic):
        self.policy = policy
        self.size = size
        self.validity = None if validity_ms is None else validity_ms / 1000.0
        self.clock = clock
        self.born = {}  # key -> clock() when it was cached (with a validity period only)
        self.entries = OrderedDict()
        self.counts = {}
        self.hits = self.misses = 0

    def get(self, key):
        rows = self.entries.get(key)
        if (
            rows is not None
            and self.validity is not None
            and self.clock() - self.born[key] > self.validity
        ):
            self._drop(key)
            rows = None
        if rows is None:
            self.misses += 1
            return None
        self.hits += 1
        if self.policy == "lru":
            self.entries.move_to_end(key)
        elif self.policy == "lfu":
            self.counts[key] += 1
        return rows

    def put(self, key, rows):
        if len(self.entries) >= self.size:
            self._evict()
        self.entries[key] = rows
        if self.policy == "lfu":
            self.counts[key] = 1
        if self.validity is not None:
            self.born[key] = self.clock()

    def _drop(self, key):
        del self.entries[key]
        self.counts.pop(key, None)
        self.born.pop(key, None)

    def _evict(self):
        if self.policy == "lfu":
            # the least used; among equals the oldest (entries keep insertion order)
            victim = min(self.entries, key=self.counts.__getitem__)
        else:
            victim = next(iter(self.entries))
        self._drop(victim)

    def clear(self):
        self.entries.clear()
        self.counts.clear()
        self.born.clear()

    def __len__(self):
        return len(self.entries)
