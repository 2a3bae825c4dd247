"""The driver of one topology inside a shared application.

A ``SharedDriver`` is the usual ``Driver`` (its own control, task and report sockets, its
``driver.json`` and ``final.json`` in the topology's run dir, the same states, metrics,
checkpoints, restart rate and kill) with three differences:

- it borrows the pool application's SparkContext instead of starting one, and never stops it;
- its barrier job has its own job group (``topology:<name>``: a kill or a restart-rate failure
  cancels this topology's tasks only) and its own FAIR scheduler pool;
- its instances are packed ``topology.instances_per_task`` to a Python worker, and the job
  is only submitted once the pool's ``SlotPool`` gave it its slots: until then it is
  WAITING_FOR_SLOTS with the pool's reason.
"""

import time

from topology.driver import Driver
from topology.pools import task_groups
from topology.shared_task import make_packed_task_function


class SharedDriver(Driver):
    """One topology of a shared application; `app` is the hosting PoolApp."""

    def __init__(self, topology, launch, run_dir, app):
        self.app = app
        super().__init__(topology, launch, run_dir)
        self.job_group = f"topology:{topology.name}"
        self.master = app.master  # one cached master view for every hosted topology
        self.groups = task_groups(self.ntasks, int(launch.get("instances_per_task", 0)))
        self.launch["executors"] = 1

    @property
    def partitions(self):
        return len(self.groups)

    def _make_context(self):
        return self.app.sc

    def _wait_for_slots(self):
        """Wait for the pool's executor and for this topology's slots (or a kill)."""
        while self.phase == "waiting":
            if self.app.executors_ready() and self.app.slots.request(
                self.topology.name, self.partitions
            ):
                return
            time.sleep(0.2)

    def _task_function(self):
        # called on the job's thread: its jobs go to this topology's FAIR pool
        self.sc.setLocalProperty("spark.scheduler.pool", self.job_group)
        return make_packed_task_function(
            self.topology.to_dict(), self.endpoints, self.launch["options"], self.groups
        )

    def _waiting_reason(self):
        if not self.app.executors_ready():
            return (
                f"{self.app.name} waits for its executor ({self.app.slots.total} cores) "
                f"from the Spark master"
            )
        return self.app.slots.reason(self.topology.name, self.partitions)

    def _stop_context(self):
        """The application stays; this topology's slots go back to the pool."""
        self.app.slots.release(self.topology.name)
        self.app.ended(self.topology.name)

    def status(self):
        out = super().status()
        out.update(
            packing="shared",
            application=self.app.name,
            slots=self.partitions,
            instances_per_worker=max(len(g) for g in self.groups) if self.groups else 0,
        )
        return out
