"""The result cache of an external table, with Siddhi's cache options: `cache='basic'`
(first in, first out), `'LRU'` (least recently used out) or `'LFU'` (least frequently used
out), holding at most `cache.size` entries.

An entry is the rows one probe found for one set of event values. Any write through the table
clears the cache, so a cached read never misses the table's own inserts, updates and deletes
(writes by other programs to the database are seen once their entries are evicted or the
table writes)."""
from collections import OrderedDict


class ResultCache:
    def __init__(self, policy: str, size: int):
        self.policy = policy
        self.size = size
        self.entries = OrderedDict()
        self.counts = {}
        self.hits = self.misses = 0

    def get(self, key):
        rows = self.entries.get(key)
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

    def _evict(self):
        if self.policy == "lfu":
            # the least used; among equals the oldest (entries keep insertion order)
            victim = min(self.entries, key=self.counts.__getitem__)
            del self.entries[victim]
            del self.counts[victim]
        else:
            self.entries.popitem(last=False)

    def clear(self):
        self.entries.clear()
        self.counts.clear()

    def __len__(self):
        return len(self.entries)
