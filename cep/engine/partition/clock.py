"""The partition's view of the scheduler: timers fire instance by instance.

Siddhi fires the timers of a partition's instances, when the clock steps, in the order the
instances were created (then by due time), not merged by due time across keys. Processors
inside a partition register timers here; the wrapper keeps one real timer per due time and,
when it fires, runs every due timer of the partition grouped by instance."""
import heapq
import itertools


class PartitionScheduler:
    def __init__(self, scheduler):
        self.real = scheduler
        self.current = 0  # creation order of the instance whose code is running
        self._timers = []  # (due, seq, order, fn)
        self._seq = itertools.count()
        self._armed = set()  # due times with a real timer pending
        self._armed_heap = []  # the same, earliest first: a fire forgets the passed ones

    def __getattr__(self, name):
        return getattr(self.real, name)

    # read for every sub-batch of every key: direct, not through __getattr__'s failed lookup
    @property
    def clock(self):
        return self.real._clock

    @property
    def playback(self):
        return self.real.playback

    def now(self):
        return self.real.now()

    def notify_at(self, due, fn, owner=None):
        heapq.heappush(self._timers, (due, next(self._seq), self.current, fn))
        if due not in self._armed:
            self._armed.add(due)
            heapq.heappush(self._armed_heap, due)
            self.real.notify_at(due, self._fire, owner=owner)

    def _fire(self, now):
        due_now = []
        while self._timers and self._timers[0][0] <= now:
            due_now.append(heapq.heappop(self._timers))
        # only the passed due times (not a rebuild of the set: a key-by-key feed leaves
        # every key's timers due after the end armed, and a rebuild per fire grew with them)
        armed, heap = self._armed, self._armed_heap
        while heap and heap[0] <= now:
            armed.discard(heapq.heappop(heap))
        previous = self.current
        for due, seq, order, fn in sorted(due_now, key=lambda t: (t[2], t[0], t[1])):
            self.current = order
            fn(now)
        self.current = previous

    def clear(self):
        self._timers.clear()
        self._armed.clear()
        self._armed_heap.clear()
