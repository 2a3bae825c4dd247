"""Shared packing: which application a topology runs in, and its slots there.

With ``topology.packing: shared`` one long-running Spark application per pool hosts many
topologies. The pool is the topology's tenant (``<Plan>[<tenant>]``, ``topology.pool:
tenant``) or one named pool for every topology. Each topology is one barrier job; its
component instances run as threads of ``ceil(instances / topology.instances_per_task)``
Python workers, each taking one task slot of the pool's ``topology.pool_slots``.

``SlotPool`` hands out those slots. A topology whose tasks do not fit in the free slots is
not submitted to Spark (a barrier stage that cannot start at once would only be retried):
it waits, WAITING_FOR_SLOTS with the reason, and starts by itself, first come first served,
when another topology of the pool ends.
"""

import math
import re
import threading

TENANT = re.compile(r"\[(-?\d+)\]$")


def packing(settings):
    """'app-per-plan' or 'shared'."""
    return settings["topology.packing"]


def pool_name(topology_name, settings):
    """The shared application of a topology: `cep-pool[<tenant>]` or `cep-pool[<pool>]`."""
    pool = settings["topology.pool"]
    if pool == "tenant":
        match = TENANT.search(topology_name)
        pool = match.group(1) if match else "default"
    return f"cep-pool[{pool}]"


def task_groups(ntasks, per_task):
    """The instances (task ids 0..n-1) each Python worker runs, in order: per_task <= 0 puts
    all of them in one worker."""
    if ntasks < 1:
        return []
    per = ntasks if per_task <= 0 else per_task
    parts = math.ceil(ntasks / per)
    return [list(range(i * per, min((i + 1) * per, ntasks))) for i in range(parts)]


class SlotPool:
    """Task slots of one shared application; thread-safe, first come first served."""

    def __init__(self, total, application="the shared application"):
        self.total, self.application = int(total), application
        self.used = {}  # topology -> slots it holds
        self.waiting = []  # topologies waiting, in arrival order
        self._lock = threading.Lock()

    @property
    def free(self):
        return self.total - sum(self.used.values())

    def request(self, topology, needed):
        """Take `needed` slots for `topology` if they are free and no earlier topology waits
        (first come, first served: a big topology is not starved by small ones; one that can
        never fit blocks nobody); else queue it (once) and return False."""
        with self._lock:
            if topology in self.used:
                return True
            free = self.free
            blocked = any(n <= self.total for _, n in self._earlier(topology))
            if needed <= free and not blocked:
                self.used[topology] = needed
                self.waiting = [w for w in self.waiting if w[0] != topology]
                return True
            if all(w[0] != topology for w in self.waiting):
                self.waiting.append((topology, needed))
            return False

    def _earlier(self, topology):
        names = [w for w, _ in self.waiting]
        return self.waiting[: names.index(topology) if topology in names else len(names)]

    def release(self, topology):
        """Give back the slots of an ended topology (and forget it if it was waiting)."""
        with self._lock:
            self.used.pop(topology, None)
            self.waiting = [w for w in self.waiting if w[0] != topology]

    def reason(self, topology, needed):
        """WAITING_FOR_SLOTS's reason, or None when the topology holds its slots."""
        with self._lock:
            if topology in self.used:
                return None
            free = self.free
            ahead = [w for w, n in self._earlier(topology) if n <= self.total]
        text = f"needs {needed} free slots in {self.application}; it has {self.total}, {free} free"
        if needed > self.total:
            return text + (
                ": more than the whole application, so it waits until "
                "topology.pool_slots is raised or its @dist parallel lowered "
                "(or topology.instances_per_task raised)"
            )
        if ahead and needed <= free:
            return text + f"; {len(ahead)} topologies wait before it"
        return text + "; it starts when another topology of the application ends"

    def describe(self):
        with self._lock:
            return {
                "total": self.total,
                "used": sum(self.used.values()),
                "topologies": len(self.used),
                "waiting": [w for w, _ in self.waiting],
            }
