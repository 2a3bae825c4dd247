"""The registry service: a ZeroMQ ROUTER socket on a thread, answering msgpack requests.

Every request gets a reply; a malformed or unknown request gets an error reply and the
service carries on (PROTOCOL.md section 1)."""

import logging
import threading
import time
import uuid

import zmq

from cep.security import cluster_secret, curve
from manager.exceptions import RegistryError
from manager.registry.table import KINDS, EndpointTable
from cep.protocol.frames import pack_message, unpack_message
from cep.protocol.sockets import close_bound

log = logging.getLogger("manager.registry")


def _field(req, name, kind, required=True, default=None):
    """A typed request field, or a BadRequest error naming it."""
    if name not in req or req[name] is None:
        if required:
            raise RegistryError("BadRequest", f"request op {req.get('op')!r} needs field {name!r}")
        return default
    value = req[name]
    ok = isinstance(value, kind) and not (kind is int and isinstance(value, bool))
    if not ok:
        raise RegistryError(
            "BadRequest",
            f"field {name!r} must be {kind.__name__ if isinstance(kind, type) else kind}, "
            f"got {value!r}",
        )
    return value


def _kind(req):
    kind = _field(req, "kind", str)
    if kind not in KINDS:
        raise RegistryError(
            "BadRequest", f"field 'kind' must be one of {', '.join(KINDS)}, got {kind!r}"
        )
    return kind


def _str_list(req, name):
    value = _field(req, name, (list, tuple), required=False, default=[])
    if not all(isinstance(v, str) for v in value):
        raise RegistryError(
            "BadRequest", f"field {name!r} must be a list of strings, got {value!r}"
        )
    return value


def _threads(req):
    """A worker's supervised threads: [{name, state, restarts, last_error}], kept
    only in that shape and at most 200 of them; anything else is left out, not refused."""
    keep = []
    for t in _field(req, "threads", (list, tuple), required=False, default=[])[:200]:
        if isinstance(t, dict) and isinstance(t.get("name"), str):
            keep.append(
                {
                    "name": t["name"][:200],
                    "state": str(t.get("state", ""))[:20],
                    "restarts": t["restarts"] if isinstance(t.get("restarts"), int) else 0,
                    "last_error": str(t["last_error"])[:500]
                    if t.get("last_error") is not None
                    else None,
                }
            )
    return keep


class RegistryService:
    """Owns an EndpointTable and serves it on `tcp://<bind_host>:<port>` (port 0: any free)."""

    def __init__(
        self,
        port=8904,
        bind_host="*",
        liveness=30.0,
        heartbeat_interval=5.0,
        plan_exists=None,
        table=None,
        security=curve.OFF,
    ):
        self.table = table or EndpointTable(liveness)
        self.heartbeat_interval = float(heartbeat_interval)
        self.plan_exists = plan_exists  # callable(tenant, plan) -> bool, or None to accept all
        self.bind_host = bind_host
        # CURVE on: only holders of the cluster key get a connection at all; CURVE off with a
        # secret: every request but ping must carry it (PROTOCOL.md section 1)
        self.security = security
        self.requested_port = port
        self.port = None
        self._ctx = zmq.Context.instance()
        self._thread = None
        self._stop = threading.Event()
        self.handled = 0
        self.errors = 0
        self.refused = 0  # requests without the cluster secret
        # every registry of the manager group, told to clients in register and worker
        # replies (they register with all of them); `instance` tells a restarted registry
        self.peers = None  # callable -> [registry address], or None outside a group
        self.instance = uuid.uuid4().hex

    def start(self):
        """Bind the socket and start serving; returns the bound port."""
        curve.start_authenticator(self._ctx, self.security.curve)
        sock = self._ctx.socket(zmq.ROUTER)
        sock.setsockopt(zmq.LINGER, 0)
        curve.server(sock, self.security.curve)
        if self.requested_port:
            sock.bind(f"tcp://{self.bind_host}:{self.requested_port}")
            self.port = self.requested_port
        else:
            self.port = sock.bind_to_random_port(f"tcp://{self.bind_host}")
        self._thread = threading.Thread(
            target=self._serve, args=(sock,), daemon=True, name=f"registry:{self.port}"
        )
        self._thread.start()
        log.info("Endpoint registry listening on port %s (%s)", self.port, self.protection)
        return self.port

    @property
    def protection(self):
        if self.security.curve is not None:
            return "CURVE: cluster key only"
        return "cluster secret required" if self.security.secret else "no authentication"

    def stop(self):
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=5)

    def _serve(self, sock):
        poller = zmq.Poller()
        poller.register(sock, zmq.POLLIN)
        try:
            while not self._stop.is_set():
                if not poller.poll(200):
                    continue
                frames = sock.recv_multipart()
                reply = self.handle_frames(frames)
                try:
                    sock.send_multipart(reply)
                except zmq.ZMQError as exc:
                    log.warning("registry could not reply: %s", exc)
        finally:
            close_bound(sock)  # the port is free when stop() returns (a restart binds it)

    def handle_frames(self, frames):
        """Reply frames for one ROUTER message: [identity, (b''), request] -> same envelope."""
        if len(frames) < 2:
            return frames[:1] + [pack_message(_error("BadRequest", "empty message"))]
        envelope, body = frames[:-1], frames[-1]
        return envelope + [pack_message(self.handle_bytes(body))]

    def handle_bytes(self, body):
        """Decode, dispatch and answer one request; never raises."""
        self.handled += 1
        try:
            req = unpack_message(body)
        except Exception as exc:  # noqa: BLE001 - any undecodable frame gets a reply
            self.errors += 1
            return _error("BadRequest", f"request is not msgpack: {exc}")
        if not isinstance(req, dict):
            self.errors += 1
            return _error("BadRequest", f"request must be a msgpack map, got {type(req).__name__}")
        given = req.pop("secret", None)
        try:
            self._authorize(req, given)
            reply = self.handle(req)
        except RegistryError as exc:
            self.errors += 1
            reply = _error(exc.name, str(exc))
        except Exception as exc:  # noqa: BLE001 - the service must survive any request
            self.errors += 1
            log.exception("registry failed on request %r", req)  # the secret is popped
            reply = _error("InternalError", f"{type(exc).__name__}: {exc}")
        if "id" in req:
            reply["id"] = req["id"]
        return reply

    def _authorize(self, req, given):
        """Without CURVE, a registry holding the cluster secret answers only requests that
        carry it (ping excepted); compared in constant time."""
        if self.security.curve is not None or not self.security.secret or req.get("op") == "ping":
            return
        if not cluster_secret.check(given, self.security.secret):
            self.refused += 1
            why = "carries no" if not given else "carries a wrong"
            log.warning(
                "registry refused %r request from an unknown party: it %s cluster secret",
                req.get("op"),
                why,
            )
            raise RegistryError(
                "Unauthorized",
                f"request {why} cluster secret (field 'secret'; "
                "workers: managers.cluster_secret_file or CEP_CLUSTER_SECRET)",
            )

    def handle(self, req):
        """Dispatch a decoded request to its op."""
        op = req.get("op")
        handler = getattr(self, f"op_{op}", None) if isinstance(op, str) else None
        if handler is None:
            raise RegistryError(
                "UnknownOp",
                f"unknown op {op!r}; known: register, unregister, "
                f"lookup, connect, release, status, worker, ping",
            )
        return handler(req)

    def _plan(self, req):
        tenant, plan = _field(req, "tenant", int), _field(req, "plan", str)
        return tenant, plan

    def op_ping(self, req):
        return {"ok": True, "pong": time.time()}

    def op_register(self, req):
        kind = _kind(req)
        tenant, plan = self._plan(req)
        if self.plan_exists is not None and not self.plan_exists(tenant, plan):
            raise RegistryError("UnknownPlan", f"no execution plan {plan} for tenant {tenant}")
        host, port = _field(req, "host", str), _field(req, "port", int)
        if not 0 < port < 65536:
            raise RegistryError("BadRequest", f"field 'port' must be 1..65535, got {port}")
        worker = _field(req, "worker", str, required=(kind == "publisher"), default="")
        address = self.table.register(
            kind,
            tenant,
            plan,
            host,
            port,
            _str_list(req, "machine"),
            _str_list(req, "streams"),
            worker,
            _field(req, "component", str, False, ""),
        )
        return {
            "ok": True,
            "endpoint": address,
            "heartbeat_interval": self.heartbeat_interval,
            "liveness": self.table.liveness,
            **self._group(),
        }

    def _group(self):
        """`instance` and, in a manager group, `registries`."""
        out = {"instance": self.instance}
        if self.peers is not None:
            try:
                out["registries"] = list(self.peers())
            except Exception:  # noqa: BLE001 - a reply never fails for the group list
                log.exception("registry group list failed")
        return out

    def op_worker(self, req):
        """A worker-info message (PROTOCOL.md): the worker's facts and load; a heartbeat too."""
        info = {
            "worker": _field(req, "worker", str),
            "host": _field(req, "host", str, False, ""),
            "url": _field(req, "url", str, False, ""),
            "roles": _str_list(req, "roles"),
            "plans": _str_list(req, "plans"),
            "machine": _str_list(req, "machine"),
        }
        for name in ("eventsIn", "eventsOut", "memoryRssBytes", "duplicates"):
            info[name] = _field(req, name, int, False, 0)
        info["cpuPercent"] = float(_field(req, "cpuPercent", (int, float), False, 0.0))
        info["threads"] = _threads(req)
        self.table.report_worker(info)
        return {
            "ok": True,
            "heartbeat_interval": self.heartbeat_interval,
            "liveness": self.table.liveness,
            **self._group(),
        }

    def op_unregister(self, req):
        kind = _kind(req)
        tenant, plan = self._plan(req)
        return {
            "ok": True,
            "removed": self.table.unregister(kind, tenant, plan, _field(req, "endpoint", str)),
        }

    def op_lookup(self, req):
        kind = _kind(req)
        tenant, plan = self._plan(req)
        stream = _field(req, "stream", str, required=(kind == "receiver"))
        ep, local, count = self.table.lookup(
            kind, tenant, plan, stream, _str_list(req, "machine"), _str_list(req, "avoid")
        )
        return {
            "ok": True,
            "endpoint": ep.address,
            "host": ep.host,
            "port": ep.port,
            "local": local,
            "connections": count,
            "worker": ep.worker,
            **self._group(),
        }

    def op_connect(self, req):
        kind = _kind(req)
        tenant, plan = self._plan(req)
        stream = _field(req, "stream", str, required=(kind == "receiver"), default="")
        cid = self.table.connect(
            kind, tenant, plan, _field(req, "endpoint", str), _field(req, "client", str), stream
        )
        return {"ok": True, "connection": cid, **self._group()}

    def op_release(self, req):
        return {"ok": True, "released": self.table.release(_field(req, "connection", str))}

    def op_status(self, req):
        tenant, plan = self._plan(req)
        client = _field(req, "client", str, False, "")
        if client:  # a connected client checking on its endpoint: its heartbeat
            self.table.touch_client(client)
        return {"ok": True, **self.table.status(tenant, plan), **self._group()}


def _error(name, message):
    return {"ok": False, "error": name, "message": message}
