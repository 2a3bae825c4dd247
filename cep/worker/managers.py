"""The worker's view of the managers: a list of addresses, using whichever answers.

`ManagerSet.get_json(path)` asks the manager that answered last, then the others in order.
`FailoverRegistry` has the RegistryClient methods the worker needs: it registers, heartbeats
and counts connections with every manager's registry and moves lookups to the next
manager's registry when one does not answer. Without configured registry addresses, each
manager's registry is the one its REST API reports (`GET /api/v1/manager`), so a manager on a
non-default registry port is found."""

import json
import logging
import threading
import urllib.error
import urllib.request

from cep.security import cluster_secret
from cep.worker.exceptions import ManagerUnavailableError
from cep.protocol.exceptions import RegistryUnavailableError
from cep.protocol.registry_client import RegistryClient
from cep.protocol.registry_group import GroupCalls

log = logging.getLogger(__name__)


def worker_secret(cfg):
    """The cluster secret the worker presents: managers.cluster_secret_file, else
    $CEP_CLUSTER_SECRET; None (with a warning: the manager will refuse plan sync) without."""
    secret = cluster_secret.read(cfg["managers.cluster_secret_file"] or None)
    if secret is None:
        log.warning(
            "no cluster secret (managers.cluster_secret_file or CEP_CLUSTER_SECRET): "
            "a manager with security.auth on refuses this worker's plan sync"
        )
    return secret


class ManagerSet:
    """Manager REST base URLs (`http://host:port`), tried from the last one that answered.

    The registry of each manager is the configured address (`managers.registries`), else the
    one the manager itself reports at `GET /api/v1/manager` (`registry`), learned on first use
    and asked again after that registry stopped answering."""

    def __init__(self, urls, registries=(), timeout=2.0, secret=None):
        self.urls = [u.rstrip("/") for u in urls]
        self.secret = secret  # the cluster secret: sent with every request
        self.configured = list(registries)
        self.learned = {}  # index -> registry address the manager reported
        self.timeout = timeout
        self.current = 0

    def order(self):
        """Indexes to try: the current manager first, then the rest in order."""
        n = len(self.urls)
        return [(self.current + i) % n for i in range(n)]

    def registry(self, i):
        """The registry address of manager i; ManagerUnavailableError while it cannot be told."""
        if self.configured:
            return self.configured[i]
        if i not in self.learned:
            try:
                _, _, body = self._get(self.urls[i] + "/api/v1/manager", None)
                address = body["registry"]
            except (OSError, ValueError, KeyError, TypeError, urllib.error.URLError) as exc:
                raise ManagerUnavailableError(
                    f"manager {self.urls[i]} did not tell its registry address: {exc}"
                ) from None
            log.info("manager %s: registry %s", self.urls[i], address)
            self.learned[i] = address
        return self.learned[i]

    def forget_registry(self, i):
        """Ask manager i for its registry again next time (it stopped answering)."""
        self.learned.pop(i, None)

    def get_json(self, path, etag=None):
        """(status, etag, body) of GET <manager><path>; 304 gives body None."""
        errors = []
        for i in self.order():
            try:
                result = self._get(self.urls[i] + path, etag)
            except (OSError, ValueError, urllib.error.URLError) as exc:
                errors.append(f"{self.urls[i]}: {exc}")
                continue
            if i != self.current:
                log.info("now using manager %s", self.urls[i])
            self.current = i
            return result
        raise ManagerUnavailableError(f"no manager answered GET {path}: {'; '.join(errors)}")

    def _get(self, url, etag):
        headers = {"Accept": "application/json", **({"If-None-Match": etag} if etag else {})}
        if self.secret:
            headers[cluster_secret.HEADER] = self.secret
        req = urllib.request.Request(url, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                return resp.status, resp.headers.get("ETag"), json.loads(resp.read())
        except urllib.error.HTTPError as exc:
            if exc.code == 304:
                return 304, etag, None
            if exc.code == 401:
                raise OSError(
                    f"HTTP 401: the manager refused this worker's cluster secret "
                    f"({'none given' if not self.secret else 'wrong secret'}; see "
                    f"--cluster-secret-file)"
                ) from None
            raise OSError(f"HTTP {exc.code}: {exc.read()[:200]!r}") from None


class FailoverRegistry(GroupCalls):
    """RegistryClient calls over the managers' registries: registrations,
    worker-info heartbeats and connections go to every manager of the list (a follower's
    registry is warm when it takes over); lookups and status ask the current manager's,
    failing over in order (cep.protocol.registry_group.GroupCalls)."""

    def __init__(self, managers, timeout=2.0, security=None):
        self.managers = managers
        self.timeout = timeout
        self.security = security  # cep.security.curve.LinkSecurity: CURVE keys, cluster secret
        self._clients = {}  # manager index -> RegistryClient
        self._lock = threading.Lock()
        self._init_group()

    @property
    def current(self):
        return self.managers.current

    @current.setter
    def current(self, i):
        self.managers.current = i

    @property
    def url(self):
        client = self._clients.get(self.managers.current)
        return client.url if client is not None else None

    def _order(self):
        return self.managers.order()

    def _client(self, i):
        with self._lock:
            if i not in self._clients:
                try:
                    address = self.managers.registry(i)
                except ManagerUnavailableError as exc:
                    raise RegistryUnavailableError(str(exc)) from None
                self._clients[i] = RegistryClient(
                    address, timeout=self.timeout, retries=0, security=self.security
                )
            return self._clients[i]

    def _lost(self, i):
        """A learned registry stopped answering: ask its manager for the address again."""
        if self.managers.configured:
            return
        with self._lock:
            client = self._clients.pop(i, None)
        self.managers.forget_registry(i)
        if client is not None:
            client.close()

    def close(self):
        for c in list(self._clients.values()):
            c.close()
