"""The HA node: one per standalone worker started with ha.peer. It decides this worker's role
in the active/passive pair, tells the peer its state every ha.sync_interval and acts on the
peer's state.

Roles: `starting` -> `active`, or `syncing` (fetching the active's state) -> `passive`.
Who is active (README "2-node HA"):
- with ha.redis_url, the holder of the Redis lease (RedisLease); while Redis does not answer,
  the rules below decide and the active stays active;
- the one that was active keeps it; on a cold start (both `starting`) the lower node id wins;
  a node that hears no peer for ha.failover_s after it starts becomes active alone;
- the passive takes over when it heard no active for ha.failover_s (writing its queued
  outputs first), unless the lease is held by the other node;
- two actives (after a partition): the higher epoch (take-overs so far) wins, then the lower
  node id; the other steps down and resyncs."""

import collections
import logging
import threading
import time

from cep.worker.ha.election import decide
from cep.worker.ha.exceptions import LeaseError, PeerError, SyncError
from cep.worker.ha.forwarder import Forwarder
from cep.worker.ha.peer import PROTOCOL, PeerClient

log = logging.getLogger(__name__)
ROLES = ("starting", "syncing", "passive", "active", "stopped")


class PeerView:
    """What we last heard from the peer."""

    def __init__(self, url):
        self.url, self.node, self.role, self.epoch = url, None, None, 0
        self.heard = None  # monotonic time of the last message
        self.active_heard = None  # ... of the last message saying it is active
        self.plans, self.error, self.forward = {}, None, None

    def describe(self, now):
        age = None if self.heard is None else round(now - self.heard, 3)
        return {
            "url": self.url,
            "node": self.node,
            "role": self.role,
            "epoch": self.epoch,
            "last_heard_s": age,
            "error": self.error,
        }


class HaNode:
    """Role, heartbeats, take-over, state sync, forwarding of one standalone worker."""

    def __init__(self, cfg, secret, lease=None):
        self.cfg = cfg
        self.node_id = cfg["ha.node_id"]
        self.interval, self.failover_s = cfg["ha.sync_interval"], cfg["ha.failover_s"]
        self.forward_mode = cfg["ha.forward"]
        self.client = PeerClient(cfg["ha.peer"], secret, timeout=min(2.0, self.failover_s / 2))
        self.forwarder = (
            Forwarder(self.client, cfg["ha.forward_timeout_s"]) if self.forward_mode else None
        )
        self.lease = lease
        self.peer = PeerView(self.client.url)
        self.role, self.epoch, self.url = "starting", 0, None
        self.plans = {}  # "tenant/name" -> HaPlan
        self.plan_errors = {}
        self.failovers = 0
        self.became_active_at = self.last_sync = None
        self.history = collections.deque(maxlen=20)
        self.started = time.monotonic()
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="ha-node")

    def bind(self, worker):
        """Take the worker's id, URL and thread supervisor (after its HTTP port is known)."""
        self.node_id = self.node_id or worker.identity.worker_id
        self.url = f"http://{worker.identity.host}:{worker.http.port}"
        if self.lease is not None:
            self.lease.node = self.node_id
        worker.threads.adopt(self, "ha-node")
        if self.forwarder is not None:
            worker.threads.adopt(self.forwarder, "ha-forwarder")
        return self

    def start(self):
        if self.forwarder is not None:
            self.forwarder.start()
        self._thread.start()
        log.info(
            "HA node %s: peer %s, %s mode, failover after %.1f s",
            self.node_id,
            self.peer.url,
            "forward" if self.forward_mode else "dual-send",
            self.failover_s,
        )
        return self

    def stop(self):
        """Stop; an active hands over: it stops writing, tells the passive its last published
        sequences and that it stopped, so the passive takes over at once (no duplicates)."""
        self._stop.set()
        self._thread.join(timeout=5)
        if self.forwarder is not None:
            self.forwarder.stop()
        if self.role != "active":
            return
        with self._lock:
            for plan in list(self.plans.values()):
                with plan._lock:
                    plan.publishing = False
            self.role = "stopped"
        if self.lease is not None:
            self.lease.release()
        self._beat()

    # -- plans --
    def build_plan(self, spec, router, cfg):
        from cep.worker.ha.plan import HaPlan

        return HaPlan(spec, router, cfg, self)

    def register(self, plan):
        with self._lock:
            with plan._lock:  # input is held until this node is active or in sync
                plan.publishing = self.role == "active"
                plan.syncing = self.role != "active"
                plan.need_sync = self.role in ("syncing", "passive")
            self.plans[plan.key] = plan

    def unregister(self, plan):
        with self._lock:
            if self.plans.get(plan.key) is plan:
                del self.plans[plan.key]
                if self.forwarder is not None:  # a new version syncs (and attaches) anew
                    self.forwarder.detach(plan.key)

    # -- input --
    def takes_input(self):
        """Forward mode: only the active takes events from clients."""
        return not self.forward_mode or self.role == "active"

    def refusal(self):
        active = self.peer.url if self.peer.role == "active" else "the other node"
        return (
            f"this worker is the {self.role} node of an HA pair in forward mode: send "
            f"events to the active ({active}); retry"
        )

    def forward(self, key, seq, stream, events):
        if self.forwarder is None or self.role != "active":
            return None
        return self.forwarder.submit(key, seq, stream, events)

    def on_forwarded(self, items):
        """POST /ha/input on the passive: apply each batch in order."""
        unknown = 0
        for key, seq, stream, events in items:
            plan = self.plans.get(key)
            if plan is None:
                unknown += 1
                continue
            plan.apply_forwarded(seq, stream, events)
        return {"ok": True, "unknown_plans": unknown}

    def snapshot(self, key, digest):
        """GET /ha/snapshot on the active; SyncError when it cannot give one."""
        plan = self.plans.get(key)
        if self.role != "active":
            raise SyncError(f"this node is {self.role}, not active: ask the active")
        if plan is None or plan.digest != digest:
            raise SyncError(
                f"plan {key}: this node runs "
                f"{'no such plan' if plan is None else 'version ' + plan.digest}"
            )
        attach = None if self.forwarder is None else (lambda seq: self.forwarder.attach(key, seq))
        return plan.snapshot_state(attach)

    # -- heartbeats --
    def message(self):
        """Our state, as the peer reads it (heartbeat and its reply)."""
        attached = self.forwarder.attached if self.forwarder else {}
        plans = {}
        for key, p in list(self.plans.items()):
            plans[key] = {
                "digest": p.digest,
                "published": dict(p.ledger.published),
                "in_seq": p.in_seq,
                "attached": key in attached,
            }
        return {
            "protocol": PROTOCOL,
            "node": self.node_id,
            "url": self.url,
            "role": self.role,
            "epoch": self.epoch,
            "forward": self.forward_mode,
            "plans": plans,
        }

    def on_heartbeat(self, message):
        """POST /ha/heartbeat: take the peer's state, answer ours."""
        self._heard(message)
        return self.message()

    def _heard(self, msg):
        plans, epoch = msg.get("plans") or {}, msg.get("epoch", 0)
        if (
            msg.get("protocol") != PROTOCOL
            or not msg.get("node")
            or not isinstance(plans, dict)
            or not all(isinstance(v, dict) for v in plans.values())
            or type(epoch) is not int
            or msg.get("role") not in ROLES
        ):
            raise PeerError(
                f"peer {self.peer.url}: a heartbeat without the HA protocol's "
                f"fields (protocol {PROTOCOL}: node, role, epoch, plans)"
            )
        now, p = time.monotonic(), self.peer
        with self._lock:
            p.node, p.role, p.epoch = str(msg["node"]), msg["role"], epoch
            p.heard, p.plans, p.forward = now, plans, msg.get("forward")
            if p.role == "active":
                p.active_heard = now
            self._check_plans()
            if p.role in ("active", "stopped"):
                self._trim()

    def _check_plans(self):
        errors = {}
        if self.peer.forward is not None and bool(self.peer.forward) != self.forward_mode:
            errors["*"] = (
                f"peer {self.peer.url} runs ha.forward={self.peer.forward}, this "
                f"node {self.forward_mode}: both nodes need the same setting"
            )
        for key, plan in self.plans.items():
            theirs = self.peer.plans.get(key)
            if theirs is None:
                errors[key] = f"plan {key}: peer {self.peer.url} does not run it"
            elif theirs.get("digest") != plan.digest:
                errors[key] = (
                    f"plan {key}: peer {self.peer.url} runs another version "
                    f"({theirs.get('digest')}, here {plan.digest}); not synced"
                )
        for key, error in errors.items():
            if self.plan_errors.get(key) != error:
                log.warning("HA: %s", error)
        self.plan_errors = errors

    def _trim(self):
        """The active's published sequences: drop them from our queues."""
        for key, plan in self.plans.items():
            theirs = self.peer.plans.get(key)
            if theirs is None or key in self.plan_errors or self.role == "active":
                continue
            with plan._lock:
                plan.ledger.trim(theirs.get("published") or {})
                stale = (
                    self.forward_mode
                    and not theirs.get("attached")
                    and not plan.syncing
                    and time.monotonic() - plan.sync_info.get("mono", 0) > 2 * self.interval
                )
                if stale:
                    plan.need_sync = True
        self.last_sync = time.time()

    def _beat(self):
        try:
            reply = self.client.heartbeat(self.message())
            self._heard(reply)
        except PeerError as exc:
            if self.peer.error != str(exc):
                log.warning("HA: %s", exc)
            self.peer.error = str(exc)
            return
        self.peer.error = None

    # -- the loop --
    def _run(self):
        next_beat = 0.0
        while not self._stop.wait(min(0.1, self.interval / 4)):
            now = time.monotonic()
            if now >= next_beat:
                next_beat = now + self.interval
                self._beat()
                self._renew()
            self._act(decide(self, now))
            if self.role in ("syncing", "passive"):
                self._sync_plans()

    def _renew(self):
        if self.lease is None or self.role != "active":
            return
        try:
            if not self.lease.hold():
                self._act(("demote", "the Redis lease is held by another node"))
        except LeaseError:
            pass  # shown in status; the active keeps publishing

    def _act(self, decision):
        if decision is None:
            return
        what, why = decision
        {"activate": self._activate, "sync": self._demote, "demote": self._demote}[what](why)

    def _activate(self, why):
        with self._lock:
            was = self.role
            self.epoch = max(self.epoch, self.peer.epoch) + 1
            self.role = "active"
            dup_before = (self.peer.active_heard or float("-inf")) + self.interval
            for plan in list(self.plans.values()):
                with plan._lock:
                    plan.release_held()
                    plan.publishing = True
                    plan.ledger.promote(plan.sinks.dispatch, dup_before)
            if was in ("passive", "syncing"):
                self.failovers += 1
            self.became_active_at = time.time()
            self.history.append({"at": self.became_active_at, "role": "active", "why": why})
        log.warning("HA node %s: %s -> active (epoch %d): %s", self.node_id, was, self.epoch, why)

    def _demote(self, why):
        with self._lock:
            was, self.role = self.role, "syncing"
            for plan in list(self.plans.values()):
                with plan._lock:  # hold input from now on: the sync replaces the state
                    plan.publishing = False
                    plan.syncing = plan.need_sync = True
            if self.forwarder is not None:
                self.forwarder.detach_all("this node is no longer active")
            self.history.append({"at": time.time(), "role": "syncing", "why": why})
        log.warning("HA node %s: %s -> syncing: %s", self.node_id, was, why)

    def _sync_plans(self):
        if self.peer.role != "active" or self.peer.error:
            return
        for key, plan in list(self.plans.items()):
            if plan.need_sync and key not in self.plan_errors and "*" not in self.plan_errors:
                self._sync_plan(key, plan)
        if self.role == "syncing" and not any(p.need_sync for p in self.plans.values()):
            with self._lock:
                self.role = "passive"
                self.history.append({"at": time.time(), "role": "passive", "why": "in sync"})
            log.info("HA node %s: in sync with %s; passive", self.node_id, self.peer.url)

    def _sync_plan(self, key, plan):
        t0 = time.monotonic()
        plan.begin_sync()
        try:
            blob = self.client.snapshot(key, plan.digest)
            plan.restore_state(blob)
        except (PeerError, SyncError) as exc:
            plan.abort_sync()
            plan.sync_info = {
                "state": "failed",
                "at": time.time(),
                "error": str(exc),
                "mono": time.monotonic(),
            }
            log.warning("HA: state sync of %s failed: %s", key, exc)
            return
        plan.sync_info = {
            "state": "done",
            "at": time.time(),
            "bytes": len(blob),
            "seconds": round(time.monotonic() - t0, 3),
            "in_seq": plan.in_seq,
            "mono": time.monotonic(),
        }
        log.info(
            "HA: plan %s synced from %s (%d bytes, %.3f s)",
            key,
            self.peer.url,
            len(blob),
            time.monotonic() - t0,
        )

    # -- status --
    def describe(self):
        now = time.monotonic()
        plans = {
            k: {key: v for key, v in p.status()["ha"].items()} for k, p in list(self.plans.items())
        }
        return {
            "node": self.node_id,
            "role": self.role,
            "epoch": self.epoch,
            "mode": "forward" if self.forward_mode else "dual-send",
            "peer": self.peer.describe(now),
            "failovers": self.failovers,
            "active_since": self.became_active_at if self.role == "active" else None,
            "last_sync": self.last_sync,
            "plan_errors": dict(self.plan_errors),
            "queue_events": sum(p["queue_events"] for p in plans.values()),
            "duplicates": sum(p["duplicates"] for p in plans.values()),
            "plans": plans,
            "history": list(self.history),
            "forwarder": self.forwarder.describe() if self.forwarder else None,
            "lease": self.lease.describe() if self.lease else None,
        }
