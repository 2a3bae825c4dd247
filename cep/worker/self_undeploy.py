"""A worker that reaches no manager undeploys its distributed plans, as WSO2 SP 4.x
workers do.

When no manager of `managers.urls` has answered the deployment sync for
`transport.heartbeat_interval x managers.max_retries` seconds (5 s x 6 by default), the
worker tears down every distributed plan (its inflow connections, publisher services and
sources), logs it at ERROR, shows it in `/status` (`selfUndeploy`), and answers events for
those plans `503 {"reason": "no-manager", "retry": true}` with `Retry-After: 1` (over ZeroMQ
they count as refused) instead of taking events it could not forward. When a manager answers
again, the sync fetches the full deployment list and the plans come back.
`managers.self_undeploy: false` (or `managers.max_retries: 0`) turns it off: the worker then
keeps its plans and buffers, as before."""

import logging
import threading
import time

from cep.worker.plumbing import stream_key
from receivers.exceptions import StreamPausedError

log = logging.getLogger(__name__)
REASON = "no-manager"


class SelfUndeploy:
    """Watches the sync's answers; undeploys and pauses the plans past the limit."""

    def __init__(self, limit_s, clock=time.monotonic):
        self.limit = float(limit_s)  # <= 0: off
        self.clock = clock
        self.last_answer = clock()
        self.undeployed = None  # {"at", "reason", "plans"} while the plans are down
        self.count = 0  # how many times it undeployed
        self.redeployed = 0
        self._lock = threading.Lock()

    @classmethod
    def from_config(cls, cfg):
        on = cfg["managers.self_undeploy"] and cfg["managers.max_retries"] > 0
        return cls(cfg["transport.heartbeat_interval"] * cfg["managers.max_retries"] if on else 0)

    def reached(self, worker):
        """A manager answered. True when the plans were undeployed: the caller fetches the
        full deployment list (an ETag would answer 304) and applies it."""
        with self._lock:
            self.last_answer = self.clock()
            gone, self.undeployed = self.undeployed, None
        if gone is None:
            return False
        for tenant, name in gone["keys"]:
            worker.router.unregister_plan(str(tenant), name)  # the 503 routes
        self.redeployed += 1
        log.warning(
            "a manager answers again: redeploying the %d plan(s) undeployed %.0f s ago",
            len(gone["keys"]),
            time.time() - gone["at"],
        )
        return True

    def unreachable(self, worker, error):
        """No manager answered; past the limit, undeploy every distributed plan once."""
        if self.limit <= 0 or self.undeployed is not None:
            return False
        silent = self.clock() - self.last_answer
        if silent < self.limit:
            return False
        reason = (
            f"no manager answered for {silent:.0f} s (limit {self.limit:g} s = "
            f"transport.heartbeat_interval x managers.max_retries): {error}"
        )
        with worker._lock:
            handles = [h for h in worker.plans.values() if getattr(h, "mode", "") == "distributed"]
            for handle in handles:
                worker.undeploy(handle.spec.key, unregister=False)  # the registry is away
                _pause(worker.router, handle.spec, reason)
        self.count += 1
        self.undeployed = {
            "at": time.time(),
            "reason": reason,
            "keys": [h.spec.key for h in handles],
        }
        log.error(
            "self-undeploy: %s; tore down %d distributed plan(s): %s; their events get "
            "503 until a manager answers",
            reason,
            len(handles),
            ", ".join(f"{t}/{n}" for t, n in self.undeployed["keys"]) or "none",
        )
        return True

    def describe(self):
        gone = self.undeployed
        return {
            "enabled": self.limit > 0,
            "limitSec": self.limit,
            "lastManagerAnswerSec": round(self.clock() - self.last_answer, 1),
            "undeployed": gone is not None,
            "reason": gone["reason"] if gone else None,
            "since": gone["at"] if gone else None,
            "plans": [f"{t}/{n}" for t, n in gone["keys"]] if gone else [],
            "undeploys": self.count,
            "redeploys": self.redeployed,
        }


def _pause(router, spec, reason):
    """Serve the plan's imported streams with a 503 carrying `reason` (not a 404)."""

    def refuse(events, wait=0.0):
        raise StreamPausedError(f"plan {spec.name} is undeployed on this worker: {reason}", REASON)

    for s in spec.imported:
        router.register(stream_key(spec, s.stream), s.definition, refuse)
