"""Registry calls over every manager of a group.

Managers sharing a Redis store each run a registry. A client registers, heartbeats and
counts its connections with **all** of them, so a follower's registry is warm when it takes
over; it asks **one** (the last that answered, then the others in order) for lookups and
status.

    reg = registry_client("tcp://m1:8904,tcp://m2:8904", security=...)   # or one address

- `register`, `unregister`, `worker_info`: sent to every registry; the first answer is
  returned, an error only when none accepted.
- `connect`: made at every registry; the caller gets one local id, `release` releases it
  everywhere. A registry that missed a connect (it was down, or restarted: its reply carries
  another `instance`) gets it again on the next register or worker-info round.
- `lookup`, `status`: the current registry, failing over in order.
- A register reply may list the group's registries (`registries`): new ones are added, so a
  manager that joined after the topology started is told of it by the first heartbeat."""

import itertools
import logging
import threading
from typing import Any, Iterable, Optional, Union

from cep.protocol.exceptions import RegistryError, RegistryUnavailableError
from cep.protocol.registry_client import RegistryClient
from cep.security.curve import LinkSecurity

log = logging.getLogger("cep.protocol.registry_group")


class GroupCalls:
    """Broadcast and fail-over calls over indexed registry clients. Subclasses give
    `_order()` (indexes, current first), `_client(i)` and `_lost(i)`."""

    def _init_group(self) -> None:
        self.current = 0
        # local id -> [connect fields, {index: registry connection id}]
        self._conns: dict[str, list[Any]] = {}
        self._instances: dict[int, Any] = {}  # index -> the registry instance last seen
        self._ids = itertools.count(1)
        self._glock = threading.RLock()

    def _order(self) -> list[int]:
        raise NotImplementedError

    def _client(self, i: int) -> RegistryClient:
        raise NotImplementedError

    def _lost(self, i: int) -> None:
        raise NotImplementedError

    def _one(self, method: str, *args: Any, **kwargs: Any) -> Any:
        last: Optional[RegistryError] = None
        for i in self._order():
            try:
                result = getattr(self._client(i), method)(*args, **kwargs)
            except RegistryUnavailableError as exc:
                last = exc
                self._lost(i)
                continue
            self.current = i
            if isinstance(result, dict):  # lookups and status tell the group's registries too
                self._learn(result.get("registries") or ())
            return result
        raise last or RegistryUnavailableError("no registry configured")

    def _all(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """Call every registry; the first reply (of the current one when it answered)."""
        replies: dict[int, Any] = {}
        errors: list[RegistryError] = []
        for i in self._order():
            try:
                replies[i] = getattr(self._client(i), method)(*args, **kwargs)
            except RegistryUnavailableError as exc:
                errors.append(exc)
                self._lost(i)
            except RegistryError as exc:  # e.g. a follower that has not read a new plan yet
                errors.append(exc)
        if not replies:
            refused = [e for e in errors if not isinstance(e, RegistryUnavailableError)]
            raise (refused or errors or [RegistryUnavailableError("no registry configured")])[0]
        for i, reply in replies.items():
            self._answered(i, reply)
        if self.current not in replies:
            self.current = next(iter(replies))
        return replies[self.current]

    def _answered(self, i: int, reply: Any) -> None:
        """A registry answered a heartbeat: learn its group list; repair its connections."""
        if not isinstance(reply, dict):
            return
        self._learn(reply.get("registries") or ())
        instance = reply.get("instance")
        with self._glock:
            if instance is not None and self._instances.get(i) not in (None, instance):
                for _, ids in self._conns.values():  # it restarted: its table is empty
                    ids.pop(i, None)
            if instance is not None:
                self._instances[i] = instance
            missing = [
                (local, fields) for local, (fields, ids) in self._conns.items() if i not in ids
            ]
        for local, fields in missing:
            try:
                cid = self._client(i).connect(**fields)
            except RegistryError:
                continue
            with self._glock:
                if local in self._conns:
                    self._conns[local][1][i] = cid

    def _learn(self, addresses: Iterable[Any]) -> None:
        """Subclasses that can add registries do (RegistryGroup)."""

    # -- the RegistryClient calls --
    def register(self, *args: Any, **kwargs: Any) -> Any:
        return self._all("register", *args, **kwargs)

    def unregister(self, *args: Any, **kwargs: Any) -> Any:
        return self._all("unregister", *args, **kwargs)

    def worker_info(self, **info: Any) -> Any:
        return self._all("worker_info", **info)

    def lookup(self, *args: Any, **kwargs: Any) -> Any:
        return self._one("lookup", *args, **kwargs)

    def status(self, *args: Any, **kwargs: Any) -> Any:
        return self._one("status", *args, **kwargs)

    def connect(
        self,
        kind: str,
        tenant: int,
        plan: str,
        endpoint: str,
        client: str,
        stream: Optional[str] = None,
    ) -> str:
        """Count the connection at every registry that knows the endpoint; a local id."""
        fields: dict[str, Any] = {
            "kind": kind,
            "tenant": tenant,
            "plan": plan,
            "endpoint": endpoint,
            "client": client,
            "stream": stream,
        }
        ids: dict[int, Any] = {}
        errors: list[RegistryError] = []
        for i in self._order():
            try:
                ids[i] = self._client(i).connect(**fields)
            except RegistryUnavailableError as exc:
                errors.append(exc)
                self._lost(i)
            except RegistryError as exc:
                errors.append(exc)
        if not ids:
            refused = [e for e in errors if not isinstance(e, RegistryUnavailableError)]
            raise (refused or errors or [RegistryUnavailableError("no registry configured")])[0]
        with self._glock:
            local = f"g{next(self._ids)}"
            self._conns[local] = [fields, ids]
        return local

    def release(self, connection: str) -> dict[str, Any]:
        with self._glock:
            entry = self._conns.pop(connection, None)
        if entry is None:
            raise RegistryError("UnknownConnection", f"no open connection {connection!r}")
        for i, cid in entry[1].items():
            try:
                self._client(i).release(cid)
            except RegistryError as exc:
                log.info("release of %s at registry %d failed: %s", connection, i, exc)
        return {"ok": True, "released": 1}


class RegistryGroup(GroupCalls):
    """Registry clients for a list of addresses (`tcp://a:1,tcp://b:2` or a list)."""

    def __init__(
        self,
        urls: Union[str, Iterable[str]],
        timeout: float = 2.0,
        retries: int = 2,
        security: Optional[LinkSecurity] = None,
    ) -> None:
        if isinstance(urls, str):
            urls = [u.strip() for u in urls.split(",") if u.strip()]
        if not urls:
            raise RegistryError("BadRequest", "no registry address given")
        self.urls = list(urls)
        self.timeout, self.retries, self._security = timeout, retries, security
        self.clients = [self._new(u) for u in self.urls]
        self.security = self.clients[0].security
        self._init_group()

    def _new(self, url: str) -> RegistryClient:
        # no retry within a call: a dead registry of the group must not stall heartbeats
        # (the next round, or the next registry, is the retry)
        return RegistryClient(url, timeout=self.timeout, retries=0, security=self._security)

    @property
    def url(self) -> str:
        return ",".join(self.urls)

    def _order(self) -> list[int]:
        n = len(self.clients)
        return [(self.current + k) % n for k in range(n)]

    def _client(self, i: int) -> RegistryClient:
        return self.clients[i]

    def _lost(self, i: int) -> None:
        pass  # the REQ client recreates its socket itself

    def _learn(self, addresses: Iterable[Any]) -> None:
        with self._glock:
            for address in addresses:
                if isinstance(address, str) and address and address not in self.urls:
                    log.info("registry group: learned %s", address)
                    self.urls.append(address)
                    self.clients.append(self._new(address))

    def request(self, op: str, **fields: Any) -> Any:
        return self._one("request", op, **fields)

    def close(self) -> None:
        for c in self.clients:
            c.close()


def registry_client(
    urls: Union[str, Iterable[str]],
    timeout: float = 2.0,
    retries: int = 2,
    security: Optional[LinkSecurity] = None,
) -> Union[RegistryClient, "RegistryGroup"]:
    """A RegistryClient for one address, a RegistryGroup for a comma-separated list (a
    manager group passes its list with a trailing comma even when it has one member, so the
    client learns the members that join later)."""
    if isinstance(urls, str) and "," not in urls:
        return RegistryClient(urls, timeout=timeout, retries=retries, security=security)
    return RegistryGroup(urls, timeout=timeout, retries=retries, security=security)
