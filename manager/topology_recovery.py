"""Plans come back by themselves after their Spark master was lost.

A topology's driver gives up when its master stays unreachable (`topology.master_lost_s`):
the topology is FAILED with "the Spark master (...) has not answered for N s" (or "the Spark
application was stopped"). `MasterRecovery` looks at every deployment every `interval`
seconds; such a FAILED topology is shown as `WAITING_FOR_MASTER` and submitted again once the
master answers (the embedded cluster is started again by the submit when it is down): the
first try at once, then with a backoff between tries (`backoff`, doubling up to
`max_backoff`). A FAILED topology for any
other reason stays FAILED: its reason is the plan's, not the cluster's."""

import logging
import threading
import time

log = logging.getLogger("manager.topology_manager")

MASTER_LOST = ("the Spark master (", "the Spark application was stopped")


def master_lost(status):
    """True when a topology status is FAILED because its Spark master or application went."""
    return status.get("status") == "FAILED" and str(status.get("reason", "")).startswith(
        MASTER_LOST
    )


class MasterRecovery:
    """A daemon thread resubmitting the topologies that failed because the master was lost."""

    def __init__(self, topologies, master_alive, interval=0.5, backoff=2.0, max_backoff=60.0):
        self.topologies = topologies
        self.master_alive = master_alive  # () -> bool: the master answers (or can be started)
        self.interval, self.backoff, self.max_backoff = interval, backoff, max_backoff
        self.recovered = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="master-recovery")

    def start(self):
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def _run(self):
        while not self._stop.wait(self.interval):
            try:
                self.check_once()
            except Exception:  # noqa: BLE001 - the loop must outlive any one failure
                log.exception("master recovery check failed")

    def check_once(self):
        """Resubmit each deployment whose topology failed for its master, when it is time."""
        for dep in list(self.topologies.deployments.values()):
            if dep.cancelled.is_set() or dep.handle is None or dep.phase != "SUBMITTED":
                continue
            status = dep.handle.status()
            if not master_lost(status):
                continue
            now = time.monotonic()
            if dep.retry_at is None:  # just noticed: the first try at once, then backoff
                dep.retry_at, dep.lost_reason = now, status["reason"]
            if now < dep.retry_at or not self.master_alive():
                continue
            self._resubmit(dep)

    def _resubmit(self, dep):
        tries = dep.master_retries + 1
        log.warning(
            "Topology %s failed because %s; resubmitting it (try %d)",
            dep.name,
            dep.lost_reason,
            tries,
        )
        new = self.topologies.deploy(
            dep.tenant,
            dep.plan,
            dep.factory,
            dep.name,
            plan_hash=dep.plan_hash,
            after_master_loss=dep.lost_reason,
        )
        new.master_retries = tries
        dep.retry_at = time.monotonic() + min(self.backoff * 2**tries, self.max_backoff)
        self.recovered += 1


def master_probe(launcher):
    """() -> bool for MasterRecovery: an external master answers its web UI; the embedded
    cluster counts as available (a submit starts it again when it is down)."""

    def alive():
        settings = getattr(launcher, "settings", None)
        if settings is None or settings["spark.master"] == "embedded":
            return True
        from topology.cluster import master_state

        located = launcher.locate()
        return located is not None and master_state(located[1], timeout=1.0) is not None

    return alive
