"""Client of the endpoint registry (REQ socket, lazy-pirate retries) and a heartbeat thread.

reg = RegistryClient("tcp://manager:8904")
reg.register("receiver", -1234, "Plan", host, port, machine, streams=["S"])
ep = reg.lookup("receiver", -1234, "Plan", stream="S", machine=machine_identity())
cid = reg.connect("receiver", -1234, "Plan", ep["endpoint"], client="w1", stream="S")
reg.release(cid)
"""

import logging
import threading
from typing import Any, Iterable, Optional

import zmq

from cep.security import cluster_secret, curve
from cep.protocol.exceptions import BadFrameError, RegistryError, RegistryUnavailableError
from cep.protocol.frames import pack_message, unpack_message

log = logging.getLogger("cep.protocol.registry_client")


class RegistryClient:
    """One REQ socket to the registry; thread-safe; recreates the socket after a timeout.
    `security` (cep.security.curve.LinkSecurity): the CURVE keys the socket uses and the
    cluster secret every request carries (field `secret`)."""

    def __init__(
        self,
        url: str,
        timeout: float = 2.0,
        retries: int = 2,
        security: Optional[curve.LinkSecurity] = None,
    ) -> None:
        self.url = url
        # None: no CURVE, and the cluster secret of $CEP_CLUSTER_SECRET if set (tools, tests)
        self.security = security or curve.LinkSecurity(secret=cluster_secret.read())
        self.timeout_ms = int(timeout * 1000)
        self.retries = retries
        self._ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context.instance()
        self._sock: Optional[zmq.Socket[bytes]] = None
        self._lock = threading.Lock()

    def _socket(self) -> "zmq.Socket[bytes]":
        if self._sock is None:
            self._sock = self._ctx.socket(zmq.REQ)
            self._sock.setsockopt(zmq.LINGER, 0)
            curve.client(self._sock, self.security.curve)
            self._sock.connect(self.url)
        return self._sock

    def _reset(self) -> None:
        if self._sock is not None:
            self._sock.close(0)
            self._sock = None

    def request(self, op: str, **fields: Any) -> dict[Any, Any]:
        """Send one request; return the reply map or raise RegistryError."""
        if self.security.secret:
            fields["secret"] = self.security.secret
        body = pack_message({"op": op, **fields})
        with self._lock:
            for _ in range(self.retries + 1):
                sock = self._socket()
                sock.send(body)
                if sock.poll(self.timeout_ms, zmq.POLLIN):
                    data = sock.recv()
                    break
                self._reset()
            else:
                raise RegistryUnavailableError(
                    f"registry {self.url} did not answer {op!r} "
                    f"within {self.timeout_ms} ms{self._hint()}"
                )
        try:
            reply = unpack_message(data)
        except BadFrameError as exc:
            raise RegistryError(
                "BadReply", f"registry {self.url} answered {op!r} with a bad frame: {exc}"
            ) from None
        if not reply.get("ok"):
            raise RegistryError(reply.get("error", "Error"), reply.get("message", ""))
        return reply

    def _hint(self) -> str:
        """Both sides must agree on CURVE: a mismatch looks like a registry that is down."""
        if self.security.curve is not None:
            return " (CURVE on here: does the manager have security.curve on, same cluster key?)"
        return " (CURVE off here: if the manager's security.curve is on, this side needs its keys)"

    def register(
        self,
        kind: str,
        tenant: int,
        plan: str,
        host: str,
        port: int,
        machine: Iterable[str] = (),
        streams: Iterable[str] = (),
        worker: Optional[str] = None,
        component: Optional[str] = None,
    ) -> dict[Any, Any]:
        fields: dict[str, Any] = {
            "kind": kind,
            "tenant": tenant,
            "plan": plan,
            "host": host,
            "port": port,
            "machine": list(machine),
            "streams": list(streams),
        }
        if worker:
            fields["worker"] = worker
        if component:
            fields["component"] = component
        return self.request("register", **fields)

    def unregister(self, kind: str, tenant: int, plan: str, endpoint: str) -> dict[Any, Any]:
        return self.request("unregister", kind=kind, tenant=tenant, plan=plan, endpoint=endpoint)

    def lookup(
        self,
        kind: str,
        tenant: int,
        plan: str,
        stream: Optional[str] = None,
        machine: Iterable[str] = (),
        avoid: Iterable[str] = (),
    ) -> dict[Any, Any]:
        """The registry's choice of endpoint; `avoid`: endpoints to take only if no other is
        live (ones this client just failed to reach)."""
        fields: dict[str, Any] = {
            "kind": kind,
            "tenant": tenant,
            "plan": plan,
            "machine": list(machine),
        }
        if stream is not None:
            fields["stream"] = stream
        if avoid:
            fields["avoid"] = list(avoid)
        return self.request("lookup", **fields)

    def connect(
        self,
        kind: str,
        tenant: int,
        plan: str,
        endpoint: str,
        client: str,
        stream: Optional[str] = None,
    ) -> Any:
        fields: dict[str, Any] = {
            "kind": kind,
            "tenant": tenant,
            "plan": plan,
            "endpoint": endpoint,
            "client": client,
        }
        if stream is not None:
            fields["stream"] = stream
        return self.request("connect", **fields)["connection"]

    def release(self, connection: Any) -> dict[Any, Any]:
        return self.request("release", connection=connection)

    def status(self, tenant: int, plan: str, client: Optional[str] = None) -> dict[Any, Any]:
        """The plan's endpoints and connections; `client` makes it that client's heartbeat."""
        fields = {"client": client} if client else {}
        return self.request("status", tenant=tenant, plan=plan, **fields)

    def worker_info(self, **info: Any) -> dict[Any, Any]:
        """Report a worker-info message (PROTOCOL.md: `worker`); also the worker's heartbeat."""
        return self.request("worker", **info)

    def close(self) -> None:
        with self._lock:
            self._reset()


class Heartbeat:
    """A daemon thread that re-sends a `register` every `interval` seconds until stopped."""

    def __init__(self, client: Any, interval: float = 5.0, **register_fields: Any) -> None:
        self.client = client
        self.interval = interval
        self.fields = register_fields
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="registry-heartbeat")
        self.beats = 0

    def start(self) -> "Heartbeat":
        self._beat()
        self._thread.start()
        return self

    def _beat(self) -> None:
        try:
            self.client.register(**self.fields)
            self.beats += 1
        except RegistryError as exc:
            log.warning("heartbeat to %s failed: %s", self.client.url, exc)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._beat()

    def stop(self, unregister: bool = True) -> None:
        """Stop beating and (by default) unregister the endpoint."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=self.interval + 3)
        if unregister:
            f = self.fields
            try:
                self.client.unregister(
                    f["kind"], f["tenant"], f["plan"], f"tcp://{f['host']}:{f['port']}"
                )
            except RegistryError as exc:
                log.info("unregister from %s failed: %s", self.client.url, exc)
