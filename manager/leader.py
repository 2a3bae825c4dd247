"""Manager fail-over: the elector thread of a manager group.

Each round (every `min(ha.lease_ttl / 3, 1 s)`) the elector renews the lease while this
manager leads, or tries to take it while it follows, and rewrites this manager's entry in
the group list. The leader deploys (adopting what runs already); a follower only reads: it
refreshes its plans from the shared store and watches the running topologies, never killing
or submitting one. A leader that cannot renew within the TTL steps down at once: it stops its
deploy threads (the topologies keep running) and follows.

Roles: `leader`, `follower` (`stopped` after stop()); a manager without a group (file store,
or `ha.enabled` false) is `leader`, as it always was."""

import logging
import threading
import time
import uuid
from pathlib import Path

import redis

from manager.exceptions import ManagerError
from manager.lease import FencedWriter, Lease, connect

log = logging.getLogger("manager.leader")


def manager_id(data_dir):
    """A stable id of this manager: kept in `<data dir>/manager-id`, made at first start."""
    path = Path(data_dir) / "manager-id"
    try:
        return path.read_text().strip()
    except OSError:
        pass
    value = f"manager-{uuid.uuid4().hex[:12]}"
    path.write_text(value + "\n")
    return value


class ManagerGroup:
    """The lease, the fenced writer and the elector thread of one manager."""

    def __init__(self, redis_url, prefix, member_id, ttl, on_promote, on_demote, on_follow):
        self.ttl = float(ttl)
        if self.ttl < 1.0:
            raise ManagerError(f"ha.lease_ttl must be at least 1 s, got {ttl}")
        self.client = connect(redis_url)
        self.lease = Lease(self.client, prefix, member_id, self.ttl)
        self.writer = FencedWriter(self.client, prefix, self.token)
        self.on_promote, self.on_demote, self.on_follow = on_promote, on_demote, on_follow
        self.on_lead = None  # called every round while leading
        self.tick = min(self.ttl / 3, 1.0)
        self.role = "follower"
        self.renewed_at = None  # monotonic time of the last successful acquire/renew
        self.acquired_at = None  # wall time this manager last became leader
        self.url = self.registry = None  # this manager's REST URL and registry address
        self.last_error = None
        self.takeovers = 0
        self._members = {}  # the group list as last read (every round)
        self._stop = threading.Event()
        self._lock = threading.RLock()
        self._thread = threading.Thread(target=self._run, daemon=True, name="manager-elector")

    @property
    def id(self):
        return self.lease.id

    def token(self):
        """The fencing token while this manager leads and its lease cannot have expired."""
        with self._lock:
            if self.role != "leader" or self.renewed_at is None:
                return None
            if time.monotonic() - self.renewed_at >= self.ttl:
                return None
            return self.lease.token

    def is_leader(self):
        return self.token() is not None

    def start(self):
        """One round now (a free lease is taken before start() returns), then the thread."""
        self.round()
        self._thread.start()
        return self

    def stop(self, release=True):
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
        with self._lock:
            try:
                if release and self.role == "leader":
                    self.lease.release()  # a follower takes over at once, not after the TTL
                self.lease.forget_member()
            except redis.RedisError as exc:
                log.warning("could not release the leader lease: %s", exc)
            self.role = "stopped"
        self.client.close()

    def _run(self):
        while not self._stop.wait(self.tick):
            try:
                self.round()
            except Exception as exc:  # noqa: BLE001 - the elector must outlive any failure
                self.last_error = f"{type(exc).__name__}: {exc}"
                log.exception("manager election round failed")

    def round(self):
        """Renew or acquire, publish this member, and let a follower refresh its view."""
        started = time.monotonic()
        try:
            if self.role == "leader":
                self._renew(started)
            else:
                self._try_acquire(started)
            self.lease.publish_member(
                {"url": self.url, "registry": self.registry, "role": self.role}
            )
            self._members = self.lease.members()
            self.last_error = None
        except redis.RedisError as exc:
            self.last_error = f"Redis: {exc}"
            log.warning("manager group: Redis did not answer: %s", exc)
            if self.role == "leader" and self.token() is None:
                self._demote("its lease expired while Redis did not answer")
        try:
            if self.role == "follower":
                self.on_follow()
            elif self.on_lead is not None:
                self.on_lead()
        except Exception as exc:  # noqa: BLE001 - e.g. the store away: next round again
            self.last_error = f"{type(exc).__name__}: {exc}"
            log.warning("manager group round: %s", self.last_error)

    def _renew(self, started):
        if self.lease.renew():
            with self._lock:
                self.renewed_at = started
            return
        self._demote("another manager holds the lease now")

    def _try_acquire(self, started):
        token = self.lease.acquire()
        if token is None:
            return
        with self._lock:
            self.role, self.renewed_at, self.acquired_at = "leader", started, time.time()
            self.takeovers += 1
        log.warning("manager %s is the leader now (fencing token %d)", self.id, token)
        self.on_promote(token)

    def _demote(self, why):
        with self._lock:
            self.role, self.renewed_at = "follower", None
            self.lease.token = None
        log.warning("manager %s steps down: %s", self.id, why)
        self.on_demote()

    # -- views --
    def members(self):
        """Every member seen within three lease TTLs: [{id, url, registry, role, seen}], as
        read in the last round (no Redis call: the registry thread asks for it)."""
        entries = self._members
        now = time.time()
        return [
            {"id": k, **v}
            for k, v in sorted(entries.items())
            if now - float(v.get("seen") or 0) <= 3 * self.ttl
        ]

    def leader_url(self):
        """The REST URL of the lease holder, or None."""
        try:
            holder = self.lease.holder()
        except redis.RedisError:
            return None
        if holder is None:
            return None
        if holder["id"] == self.id:
            return self.url
        for m in self.members():
            if m["id"] == holder["id"]:
                return m.get("url")
        return None

    def registries(self):
        """Registry addresses of the live members, this manager's first."""
        others = [m["registry"] for m in self.members() if m["id"] != self.id and m.get("registry")]
        return [self.registry] + [r for r in others if r != self.registry]

    def describe(self):
        """The status fields of the group: role, lease holder, lease age, fencing token."""
        try:
            holder, newest = self.lease.holder(), self.lease.newest_token()
        except redis.RedisError as exc:
            holder, newest, self.last_error = None, None, f"Redis: {exc}"
        age = None
        if holder is not None:  # the lease was last set or renewed TTL - remaining ago
            age = round(max(0.0, self.ttl - holder["ttlMs"] / 1000.0), 2)
        return {
            "id": self.id,
            "role": self.role,
            "leaseTtlSec": self.ttl,
            "leaseHolder": holder["id"] if holder else None,
            "leaseAgeSec": age,
            "fencingToken": holder["token"] if holder else None,
            "newestToken": newest,
            "ownToken": self.lease.token,
            "leaderSince": self.acquired_at if self.role == "leader" else None,
            "takeovers": self.takeovers,
            "lastError": self.last_error,
        }
