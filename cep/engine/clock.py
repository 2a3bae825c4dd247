"""Time: one Scheduler per runtime, on event time (playback) or on the wall clock.

Playback: the clock is the event time and never goes back. Before an event with timestamp t is
processed, every timer due at or before t fires while the clock reads t (Siddhi 3 stamps what
a timer emits with the time the clock stepped to, not with the due time). `advance(t)` does the
same without an event.

Order of the timers one clock step passes: by the `rank` of the processor that set them, then
by due time. Siddhi 3.2 gives each timed processor (a time window, a rate limiter, ...) its own
scheduler, each listening to the plan's clock; on a step the listeners run in the order they
were created, each firing all of its own due timers, so a join's left window expires
everything due before its right window flushes, whatever their due times. `new_rank(phase)`
hands out ranks in creation order: phase 0 for the processors built with the plan (in plan
order), 1 for those Siddhi creates when the plan starts (rate limiters), 2 for a partition's
per-key copies (created when a key first arrives). A timer set while the step runs joins it if
its rank is not before the one firing (Siddhi's listener loop has passed the earlier ones: they
wait for the next step). Timers without a rank (`()`) come first, in due order.

A timer may name an `owner` stream: a processor fed directly by that stream that also does the
timer's work inline when the stream's events arrive (time windows expire on arrival). The input
handler of the owner stream does not split its batches at such timers, but only while that
processor's query is the stream's sole reader (with several, every timer due by an event fires
before any query sees it, as in Siddhi 3.2); they fire after the batch (and before any other
stream's later events) and find nothing left to do.

Wall clock: a daemon thread fires due timers under the runtime's lock.
"""

import heapq
import itertools
import threading
import time


def wall_millis():
    return int(time.time() * 1000)


Rank = tuple  # (phase, n[, ...]): see Scheduler.new_rank


class Scheduler:
    """Timers `notify_at(due, fn, owner=None, rank=())`; `fn(now)` is called once when the
    clock reaches `due`. `now()` is the current time in epoch milliseconds."""

    def __init__(self, playback=False, lock=None):
        self.playback = playback
        self.lock = lock if lock is not None else threading.RLock()
        self._heap = []  # (due, seq, fn, owner, rank)
        self._seq = itertools.count()
        self._ranks = [0, 0, 0]  # the next rank of each phase
        self._step = None  # while a step fires: its timers, (rank, due, seq, fn), as a heap
        self._step_rank = ()  # the rank of the timer firing
        self._step_clock = None  # the time the step fires at
        self._clock = None  # playback clock; None until the first event
        self._thread = None
        self._wake = threading.Condition(self.lock)
        self._stopped = False
        self.restarts = 0  # playback clock restarts (restore_clock(None)), see restore_clock

    # -- time --
    def now(self):
        if self.playback:
            return self._clock if self._clock is not None else 0
        return wall_millis()

    @property
    def clock(self):
        return self._clock

    def set_clock(self, ts):
        """Playback: move the clock forward to `ts` without firing timers."""
        if self._clock is None or ts > self._clock:
            self._clock = ts

    def restore_clock(self, ts):
        """Put the clock back after a processor raised it for its own output (a batch window's
        flush inside a batch processed in one call); only that processor may.

        `restore_clock(None)` on a running clock restarts it: a key-by-key feed (cep backtest)
        starts the next key's run on its own clock once the earlier keys' runs have ended
        (advanced to the end). `restarts` counts these, so that state kept in filing order
        (the pattern kernel's waiting partials) can end the earlier runs rather than let their
        late timestamps stand in the way of the new run's expiry."""
        if ts is None and self._clock is not None:
            self.restarts += 1
        self._clock = ts

    # -- timers --
    def new_rank(self, phase: int = 0) -> Rank:
        """The next rank of `phase` (0: built with the plan, 1: created at start, 2: a
        partition's per-key copy), after every rank handed out before in that phase."""
        n = self._ranks[phase]
        self._ranks[phase] = n + 1
        return (phase, n)

    def reserve_rank(self, phase: int, n: int) -> None:
        """Hand out only ranks after `(phase, n)` from now on (a restored partition keeps
        its keys' creation order)."""
        if self._ranks[phase] <= n:
            self._ranks[phase] = n + 1

    def notify_at(self, due, fn, owner=None, rank: Rank = ()):
        if self.playback:
            if not self._join_step(due, fn, rank):
                heapq.heappush(self._heap, (due, next(self._seq), fn, owner, rank))
            return
        with self.lock:  # re-entrant: callers under the runtime lock are fine
            if self._join_step(due, fn, rank):
                return
            heapq.heappush(self._heap, (due, next(self._seq), fn, owner, rank))
            self._ensure_thread()
            self._wake.notify()

    def _join_step(self, due, fn, rank):
        """A timer set while a step fires joins it when it is due and its rank is not before
        the one firing."""
        step = self._step
        if step is None or due > self._step_clock or rank < self._step_rank:
            return False
        heapq.heappush(step, (rank, due, next(self._seq), fn))
        return True

    def in_step(self) -> bool:
        """Whether timers are firing (a clock step is running)."""
        return self._step is not None

    def next_due(self, skip_owner=None):
        """The earliest due time of a timer not owned by `skip_owner`, or None."""
        if not self._heap:
            return None
        if skip_owner is None or self._heap[0][3] != skip_owner:
            return self._heap[0][0]
        best = None
        for due, _, _, owner, _ in self._heap:
            if owner != skip_owner and (best is None or due < best):
                best = due
        return best

    def advance(self, ts):
        """Playback: step the clock to `ts` (if later) and fire every timer due at or before it."""
        self.set_clock(ts)
        now = self._clock
        heap = self._heap
        if heap and heap[0][0] <= now:
            self._step_fire(now, None)

    def _step_fire(self, now, on_error):
        """Fire every timer due at `now`: by rank, then due time (see the module docstring)."""
        heap = self._heap
        step = []
        while heap and heap[0][0] <= now:
            due, seq, fn, _, rank = heapq.heappop(heap)
            step.append((rank, due, seq, fn))
        heapq.heapify(step)
        outer = self._step, self._step_rank, self._step_clock
        self._step, self._step_clock = step, now
        try:
            while step:
                rank, _, _, fn = heapq.heappop(step)
                self._step_rank = rank
                if on_error is None:
                    fn(now)
                    continue
                try:
                    fn(now)
                except Exception:  # a failing timer must not kill the clock thread
                    on_error()
        finally:
            for rank, due, seq, fn in step:  # left by a raising timer: kept for later
                heapq.heappush(heap, (due, seq, fn, None, rank))
            self._step, self._step_rank, self._step_clock = outer

    def pending(self):
        return len(self._heap)

    def clear(self):
        self._heap.clear()

    def get_state(self):
        return {"clock": self._clock}

    def set_state(self, state):
        self._heap.clear()
        self._clock = state.get("clock")

    # -- wall clock thread --
    def _ensure_thread(self):
        if self._thread is None and not self._stopped:
            self._thread = threading.Thread(target=self._run, name="cep-scheduler", daemon=True)
            self._thread.start()

    def _run(self):
        with self.lock:
            while not self._stopped:
                if not self._heap:
                    self._wake.wait(1.0)
                    continue
                delay = (self._heap[0][0] - wall_millis()) / 1000.0
                if delay > 0:
                    self._wake.wait(min(delay, 1.0))
                    continue
                self._fire_due(wall_millis())

    def _fire_due(self, now):
        def failed():
            import logging

            logging.getLogger(__name__).exception("timer failed")

        self._step_fire(now, failed)

    def stop(self):
        with self.lock:
            self._stopped = True
            self._wake.notify_all()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=2)
