"""The driver's checkpoint coordinator.

Every ``interval`` seconds while all tasks run, it starts checkpoint n (the driver publishes
``"checkpoint": n`` on the control channel; spouts snapshot and emit the barrier). Each
instance acks with a ``checkpoint`` report; when every instance of the current stage attempt
acked, ``metadata.json`` is written and the checkpoint is complete (the driver then publishes
``"completed": n`` so spouts commit their offsets at the workers). A checkpoint not complete
within ``timeout`` is abandoned and counted as a failure. On a new stage attempt the
in-flight checkpoint is abandoned and the restore point is pinned: the newest complete
checkpoint whose every blob passes its checksum (a corrupt one is reported and skipped,
falling back to the previous one).
"""

import logging
import time

from topology.checkpoint.exceptions import CheckpointError
from topology.checkpoint.store import open_store, plan_key

log = logging.getLogger(__name__)


def checkpoint_options(settings, name, spec, state_dir):
    """The ``checkpoint`` launch options of one topology from its settings."""
    return {
        "interval": settings["checkpoint.interval"],
        "keep": settings["checkpoint.keep"],
        "timeout": settings["checkpoint.timeout_s"],
        "dir": settings["checkpoint.dir"] or str(state_dir / "checkpoints"),
        "redis_url": settings["checkpoint.redis_url"],
        "name": name,
        "key": plan_key(spec),
    }


class Coordinator:
    """Triggers, acks, completion, retention, restore point and metrics of one topology."""

    def __init__(self, options, ntasks, store=None, clock=time.monotonic):
        self.options, self.ntasks, self.clock = options or {}, ntasks, clock
        self.interval = float(self.options.get("interval") or 0)
        self.enabled = self.interval > 0
        self.timeout = float(self.options.get("timeout") or max(60.0, 10 * self.interval))
        self.store = store if store is not None or not self.enabled else open_store(self.options)
        self.attempt, self.restore_id = -1, None
        self.attempts_seen = 0  # stage attempts of this driver: more than one is a restart
        self.current, self.acks, self.started = None, {}, 0.0
        self.next_at = self.clock() + self.interval
        self.next_id = self._first_id()
        self.last = {}
        self.counts = {"completed": 0, "failed": 0, "corrupt": 0, "abandoned": 0}
        self.errors = []
        self.notice = ""
        if self.enabled:
            log.info(
                "checkpoints every %.1f s in %s (plan key %s): a plan whose queries "
                "change gets a fresh key, i.e. starts with fresh state",
                self.interval,
                self.store.location,
                self.options.get("key"),
            )
            self._check_plan_change()

    def _check_plan_change(self):
        """Say so when this topology has checkpoints of another plan version only."""
        try:
            if self.store.completed() or not self.store.other_keys():
                return
        except CheckpointError:
            return
        self.notice = (
            "the plan's queries changed since its last checkpoint: it starts with "
            "fresh state (the earlier version's checkpoints are not restored)"
        )
        log.warning("%s", self.notice)

    def _first_id(self):
        if not self.enabled:
            return 1
        try:
            return self.store.next_id()
        except CheckpointError as exc:
            self._error(str(exc))
            return 1

    def _error(self, text):
        log.error("%s", text)
        self.errors = (self.errors + [{"time": time.time(), "error": text}])[-5:]

    # -- stage attempts and restore --
    def new_attempt(self, attempt):
        """A new stage attempt reported: abandon the in-flight checkpoint, pin the restore."""
        self.attempt = attempt
        self.attempts_seen += 1
        if self.current is not None:
            self._abandon("a task failed; the stage restarts")
        self.restore_id = self.restore_point() if self.enabled else None
        self.next_at = self.clock() + self.interval
        if self.restore_id is not None:
            log.info("stage attempt %s restores checkpoint %s", attempt, self.restore_id)

    def restore_point(self):
        """The newest complete checkpoint whose blobs all check; None for fresh state."""
        try:
            done = self.store.completed()
        except CheckpointError as exc:
            self._error(f"cannot list checkpoints: {exc}; starting with fresh state")
            return None
        for cid in reversed(done):
            try:
                for task in range(self.ntasks):
                    self.store.read(cid, task)
                return cid
            except CheckpointError as exc:
                self.counts["corrupt"] += 1
                self._error(f"{exc}; falling back to the previous complete checkpoint")
        return None

    # -- the periodic part --
    def tick(self, running):
        """Start a checkpoint when due (returns its id), abandon an overdue one."""
        if not self.enabled:
            return None
        now = self.clock()
        if self.current is not None:
            if now - self.started > self.timeout:
                self._abandon(f"not complete within {self.timeout:.0f} s")
            return None
        if not running or now < self.next_at:
            return None
        self.current, self.acks, self.started = self.next_id, {}, now
        self.next_id += 1
        return self.current

    def _abandon(self, why):
        cid = self.current
        self.counts["failed"] += 1
        self._error(f"checkpoint {cid} abandoned: {why}")
        self.current, self.acks = None, {}
        self.next_at = self.clock() + self.interval
        try:
            self.store.discard(cid)
        except CheckpointError as exc:
            log.warning("%s", exc)

    def on_ack(self, attempt, report):
        """A task's checkpoint report; completes the checkpoint when all tasks acked."""
        if attempt != self.attempt or report.get("id") != self.current:
            return False
        if report.get("error"):
            self._abandon(f"task {report.get('task')}: {report['error']}")
            return False
        self.acks[report["task"]] = report
        if len(self.acks) < self.ntasks:
            return False
        return self._complete()

    def _complete(self):
        cid, acks = self.current, self.acks
        duration = self.clock() - self.started
        size = sum(a.get("bytes", 0) for a in acks.values())
        align = max(a.get("alignment_ms", 0.0) for a in acks.values())
        meta = {
            "attempt": self.attempt,
            "duration_ms": round(duration * 1000, 1),
            "bytes": size,
            "alignment_ms": align,
            "tasks": {
                str(t): {
                    k: a.get(k)
                    for k in ("component", "index", "bytes", "alignment_ms", "snapshot_ms")
                }
                for t, a in sorted(acks.items())
            },
        }
        self.current, self.acks = None, {}
        self.next_at = self.clock() + self.interval
        try:
            self.store.complete(cid, meta)
        except (CheckpointError, OSError) as exc:
            self.counts["failed"] += 1
            self._error(f"checkpoint {cid}: cannot complete: {exc}")
            return False
        self.counts["completed"] += 1
        self.last = {
            "id": cid,
            "time": time.time(),
            "duration_ms": meta["duration_ms"],
            "bytes": size,
            "alignment_ms": align,
        }
        return True

    def control(self):
        """The checkpoint fields of the control message the driver publishes."""
        return {
            "checkpoint": self.current,
            "completed": self.last.get("id"),
            "restore": [self.attempt, self.restore_id, self.attempts_seen > 1],
        }

    def metrics(self):
        """Per-plan checkpoint metrics for status/metrics replies."""
        if not self.enabled:
            return {"enabled": False}
        return {
            "enabled": True,
            "interval_s": self.interval,
            "store": self.store.kind,
            "plan_key": self.options.get("key"),
            "in_progress": self.current,
            "restored_from": self.restore_id,
            "last": dict(self.last),
            **self.counts,
            "notice": self.notice,
            "errors": list(self.errors),
        }
