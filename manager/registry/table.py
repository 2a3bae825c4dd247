"""The registry's state: endpoints with heartbeats, and open connections. No sockets here.

Selection (PROTOCOL.md section 1): skip endpoints without a heartbeat inside the liveness
window (with a warning) and those the requester asks to avoid (while another is live),
prefer the requester's machine, then the fewest open connections.
Connections are counted when made and released when closed (CEP 4.0 never released them)."""

import itertools
import logging
import threading
import time
from dataclasses import dataclass, field

from manager.exceptions import RegistryError
from cep.protocol.identity import is_identifying

log = logging.getLogger("manager.registry")
KINDS = ("receiver", "publisher")


@dataclass
class Endpoint:
    """One registered socket: a receiver spout task or a worker's CEP publisher for one plan."""

    kind: str
    tenant: int
    plan: str
    host: str
    port: int
    machine: frozenset
    streams: tuple = ()
    worker: str = ""
    component: str = ""
    last_seen: float = 0.0
    last_chosen: int = 0
    warned: bool = False

    @property
    def address(self):
        return f"tcp://{self.host}:{self.port}"

    def to_dict(self, now, connections=0):
        return {
            "kind": self.kind,
            "tenant": self.tenant,
            "plan": self.plan,
            "endpoint": self.address,
            "host": self.host,
            "port": self.port,
            "machine": sorted(self.machine),
            "streams": list(self.streams),
            "worker": self.worker,
            "component": self.component,
            "age": round(now - self.last_seen, 3),
            "connections": connections,
        }


@dataclass
class Connection:
    """An open connection from a client to an endpoint."""

    id: str
    kind: str
    tenant: int
    plan: str
    endpoint: str
    client: str
    stream: str = ""
    since: float = field(default_factory=time.time)

    def to_dict(self, live=True):
        return {
            "connection": self.id,
            "kind": self.kind,
            "tenant": self.tenant,
            "plan": self.plan,
            "endpoint": self.endpoint,
            "client": self.client,
            "stream": self.stream,
            "live": live,
        }


class EndpointTable:
    """Thread-safe endpoint and connection bookkeeping with an injectable clock."""

    def __init__(self, liveness=30.0, clock=time.monotonic):
        self.liveness = float(liveness)
        self.clock = clock
        self.endpoints = {}  # (kind, tenant, plan, address) -> Endpoint
        self.connections = {}  # id -> Connection
        self.clients = {}  # client id -> last heartbeat (clients that heartbeat: workers, bolts)
        self.workers = {}  # worker id -> (last heartbeat, worker-info dict)
        self._ids = itertools.count(1)
        self._choices = itertools.count(1)
        self.replaced = 0  # endpoints replaced by a restarted task of the same component
        self.tombstones = {}  # replaced endpoint key -> when (refused for 2 liveness windows)
        self._lock = threading.RLock()

    def register(
        self, kind, tenant, plan, host, port, machine=(), streams=(), worker="", component=""
    ):
        """Add an endpoint or refresh its heartbeat; returns its address."""
        ep = Endpoint(
            kind,
            tenant,
            plan,
            host,
            port,
            frozenset(m for m in (*machine, host) if is_identifying(m)),
            tuple(streams),
            worker,
            component,
        )
        key = (kind, tenant, plan, ep.address)
        with self._lock:
            if key in self.tombstones and self.clock() - self.tombstones[key] < 2 * self.liveness:
                raise RegistryError(
                    "Replaced",
                    f"{kind} endpoint {ep.address} of plan {plan} "
                    f"was replaced by a restarted task of {component or '?'}",
                )
            self.tombstones.pop(key, None)
            if component:
                self._replace(key, component)
            old = self.endpoints.get(key)
            if old is not None:
                ep.last_chosen = old.last_chosen
            ep.last_seen = self.clock()
            self.endpoints[key] = ep
        return ep.address

    def _replace(self, key, component):
        """A restarted task (same component instance, new socket) replaces its predecessor at
        once: the old endpoint and its connections go, so lookups answer the new one and
        clients connected to the old one see it gone (recovery <= 30 s)."""
        kind, tenant, plan, address = key
        stale = [
            k
            for k, ep in self.endpoints.items()
            if k[:3] == key[:3] and k[3] != address and ep.component == component
        ]
        for k in stale:
            del self.endpoints[k]
            self.tombstones[k] = self.clock()  # its late heartbeats must not take it back
            log.info(
                "%s endpoint %s of plan %s (tenant %s) replaced by %s (%s restarted)",
                kind,
                k[3],
                plan,
                tenant,
                address,
                component,
            )
            self._drop_connections(
                lambda c, a=k[3]: (
                    c.endpoint == a and c.plan == plan and c.tenant == tenant and c.kind == kind
                )
            )
        self.replaced += len(stale)

    def unregister(self, kind, tenant, plan, address):
        with self._lock:
            ep = self.endpoints.pop((kind, tenant, plan, address), None)
            if ep is None:
                return 0
            self._drop_connections(
                lambda c: (
                    c.endpoint == address
                    and c.plan == plan
                    and c.tenant == tenant
                    and c.kind == kind
                )
            )
            return 1

    def remove_plan(self, tenant, plan, kind=None):
        """Drop a plan's endpoints (of one kind, or all) and their connections."""
        with self._lock:
            keys = [
                k
                for k in self.endpoints
                if k[1] == tenant and k[2] == plan and kind in (None, k[0])
            ]
            for k in keys:
                del self.endpoints[k]
            self._drop_connections(
                lambda c: c.tenant == tenant and c.plan == plan and kind in (None, c.kind)
            )
            return len(keys)

    def drop_connections(self, tenant, plan, kind):
        """Forget a plan's open connections of one kind (their clients were killed)."""
        with self._lock:
            before = len(self.connections)
            self._drop_connections(
                lambda c: c.tenant == tenant and c.plan == plan and c.kind == kind
            )
            return before - len(self.connections)

    def lookup(self, kind, tenant, plan, stream=None, machine=(), avoid=()):
        """Choose a live endpoint (local first, then fewest open connections); endpoints in
        `avoid` (ones the requester just failed to reach) only when no other is live."""
        with self._lock:
            self.expire()
            live = [
                ep
                for ep in self._live(kind, tenant, plan)
                if stream is None or kind != "receiver" or stream in ep.streams
            ]
            if not live:
                raise RegistryError(
                    "EndpointNotFound", _not_found(kind, tenant, plan, stream, machine)
                )
            live = [ep for ep in live if ep.address not in avoid] or live
            mine = set(machine)
            local = [ep for ep in live if ep.machine & mine]
            counts = self._open_counts()
            chosen = min(local or live, key=lambda e: (counts.get(e.address, 0), e.last_chosen))
            chosen.last_chosen = next(self._choices)
            return chosen, bool(local), counts.get(chosen.address, 0)

    def _live(self, kind, tenant, plan):
        now = self.clock()
        out = []
        for (k, t, p, _), ep in self.endpoints.items():
            if (k, t, p) != (kind, tenant, plan):
                continue
            age = now - ep.last_seen
            if age <= self.liveness:
                out.append(ep)
            elif not ep.warned:
                ep.warned = True
                log.warning(
                    "Ignoring %s endpoint %s of plan %s (tenant %s): no heartbeat for "
                    "%.1f s (liveness window %.1f s)",
                    kind,
                    ep.address,
                    plan,
                    tenant,
                    age,
                    self.liveness,
                )
        return out

    def expire(self):
        """Remove endpoints silent for more than two liveness windows (and their connections)."""
        now = self.clock()
        with self._lock:
            dead = [k for k, ep in self.endpoints.items() if now - ep.last_seen > 2 * self.liveness]
            for k in dead:
                ep = self.endpoints.pop(k)
                log.warning(
                    "Removing stale %s endpoint %s of plan %s (tenant %s)",
                    ep.kind,
                    ep.address,
                    ep.plan,
                    ep.tenant,
                )
                self._drop_connections(
                    lambda c, ep=ep: (
                        c.endpoint == ep.address and c.plan == ep.plan and c.tenant == ep.tenant
                    )
                )
            gone = {cl for cl, seen in self.clients.items() if now - seen > 2 * self.liveness}
            for cl in gone:
                del self.clients[cl]
            self._drop_connections(lambda c: c.client in gone)
            return len(dead)

    def connect(self, kind, tenant, plan, address, client, stream=""):
        """Count a connection made to a registered endpoint; returns its id. A client (a bolt
        instance, a worker's stream) holds one connection per plan and stream: a new connect
        replaces the one it made before (a restarted task never released it)."""
        with self._lock:
            if (kind, tenant, plan, address) not in self.endpoints:
                raise RegistryError(
                    "EndpointNotFound",
                    f"no {kind} endpoint {address} registered for plan {plan} of tenant {tenant}",
                )
            self._drop_connections(
                lambda c: (
                    (c.kind, c.tenant, c.plan, c.client, c.stream)
                    == (kind, tenant, plan, client, stream)
                )
            )
            cid = f"c{next(self._ids)}"
            self.connections[cid] = Connection(cid, kind, tenant, plan, address, client, stream)
            return cid

    def release(self, connection_id):
        with self._lock:
            if self.connections.pop(connection_id, None) is None:
                raise RegistryError("UnknownConnection", f"no open connection {connection_id!r}")
            return 1

    def _drop_connections(self, predicate):
        for cid in [cid for cid, c in self.connections.items() if predicate(c)]:
            del self.connections[cid]

    def _open_counts(self):
        counts = {}
        for c in self.connections.values():
            counts[c.endpoint] = counts.get(c.endpoint, 0) + 1
        return counts

    # -- clients and workers that heartbeat --
    def touch_client(self, client):
        """A heartbeat of a connecting party (a worker, a publisher bolt instance)."""
        with self._lock:
            self.clients[client] = self.clock()

    def report_worker(self, info):
        """A worker-info message (PROTOCOL.md): who the worker is, its load; also a heartbeat."""
        with self._lock:
            now = self.clock()
            info = dict(info)
            prev = self.workers.get(info["worker"])
            for name in ("eventsIn", "eventsOut"):
                info[name + "PerSec"] = _rate(prev, now, info, name)
            self.workers[info["worker"]] = (now, info)
            self.clients[info["worker"]] = now

    def worker_infos(self):
        """[(age in seconds, info dict)] of the workers heard from within two liveness windows."""
        with self._lock:
            now = self.clock()
            for wid in [
                w for w, (seen, _) in self.workers.items() if now - seen > 2 * self.liveness
            ]:
                del self.workers[wid]
            return [(now - seen, info) for seen, info in self.workers.values()]

    def connection_live(self, c, now=None):
        """Live: its endpoint heartbeats within liveness, and so does its client when the client
        is one that heartbeats (a client never heard from is judged by its endpoint alone)."""
        now = self.clock() if now is None else now
        ep = self.endpoints.get((c.kind, c.tenant, c.plan, c.endpoint))
        if ep is None or now - ep.last_seen > self.liveness:
            return False
        seen = self.clients.get(c.client)
        return seen is None or now - seen <= self.liveness

    def status(self, tenant, plan):
        """Live endpoints and open connections of one plan (dicts; `live` per connection)."""
        with self._lock:
            self.expire()
            now = self.clock()
            counts = self._open_counts()
            eps = {
                kind: [
                    ep.to_dict(now, counts.get(ep.address, 0))
                    for ep in self._live(kind, tenant, plan)
                ]
                for kind in KINDS
            }
            conns = [
                c.to_dict(self.connection_live(c, now))
                for c in self.connections.values()
                if c.tenant == tenant and c.plan == plan
            ]
        return {"receivers": eps["receiver"], "publishers": eps["publisher"], "connections": conns}

    def snapshot(self):
        """Every endpoint (live or not) with its open and live connection counts, for the
        deployment status page: [(endpoint dict, stale)]."""
        with self._lock:
            self.expire()
            now = self.clock()
            live_counts = {}
            for c in self.connections.values():
                if self.connection_live(c, now):
                    live_counts[c.endpoint] = live_counts.get(c.endpoint, 0) + 1
            return [
                (
                    ep.to_dict(now, live_counts.get(ep.address, 0)),
                    now - ep.last_seen > self.liveness,
                )
                for ep in self.endpoints.values()
            ]


def _rate(prev, now, info, name):
    """Events per second between two worker-info reports (0 for the first, or after a restart)."""
    if prev is None or now <= prev[0]:
        return 0.0
    delta = info.get(name, 0) - prev[1].get(name, 0)
    return round(delta / (now - prev[0]), 2) if delta >= 0 else 0.0


def _not_found(kind, tenant, plan, stream, machine):
    what = "receiver spout" if kind == "receiver" else "CEP publisher"
    extra = f" (stream {stream})" if stream else ""
    return (
        f"no live {what} for plan {plan} of tenant {tenant}{extra} "
        f"for requester {', '.join(machine) or '?'}"
    )
