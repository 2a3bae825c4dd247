"""The partition's view of the scheduler: each instance's timers rank after the plan's, in the
order the instances were created.

Siddhi 3.2 clones a partition's timed processors, with their schedulers, when a key first
arrives; a clone's scheduler listens to the plan's clock after every scheduler created before
it. So on a clock step the timers of a partition's instances fire instance by instance in
creation order (then by processor, in plan order, then by due time), after those of the
queries outside partitions. Processors inside a partition register timers here; each goes to
the real scheduler ranked `(2, instance order) + the processor's own rank`, and runs with
`current` naming its instance (so the timers it sets in turn rank with that instance)."""

from cep.engine.clock import Rank, Scheduler


class PartitionScheduler:
    def __init__(self, scheduler: Scheduler) -> None:
        self.real = scheduler
        self.current = 0  # creation order of the instance whose code is running
        self._epoch = 0  # bumped by clear(): timers set before it do nothing

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

    def new_instance(self) -> int:
        """The creation order of a new instance (across every partition of the plan)."""
        return self.real.new_rank(2)[1]

    def restored_instance(self, order: int) -> None:
        """An instance restored with its creation order: later ones come after it."""
        self.real.reserve_rank(2, order)

    def notify_at(self, due, fn, owner=None, rank: Rank = ()):
        order, epoch = self.current, self._epoch

        def fire(now):
            if self._epoch != epoch:
                return
            previous = self.current
            self.current = order
            try:
                fn(now)
            finally:
                self.current = previous

        self.real.notify_at(due, fire, owner=owner, rank=(2, order) + tuple(rank))

    def clear(self):
        self._epoch += 1
