"""The worker's view of the managers: a list of addresses, using whichever answers.

`ManagerSet.get_json(path)` asks the manager that answered last, then the others in order.
`FailoverRegistry` has the RegistryClient methods the worker needs and moves to the next
manager's registry when one does not answer."""
import json
import logging
import threading
import urllib.error
import urllib.request
from urllib.parse import urlsplit

from cep.worker.exceptions import ManagerUnavailableError
from manager.exceptions import RegistryUnavailableError
from manager.registry.client import RegistryClient

log = logging.getLogger(__name__)
DEFAULT_REGISTRY_PORT = 8904


def registry_url_for(rest_url):
    """The default registry address of a manager: its REST host on port 8904."""
    host = urlsplit(rest_url).hostname or "127.0.0.1"
    return f"tcp://{host}:{DEFAULT_REGISTRY_PORT}"


class ManagerSet:
    """Manager REST base URLs (`http://host:port`), tried from the last one that answered."""

    def __init__(self, urls, registries=(), timeout=2.0):
        self.urls = [u.rstrip("/") for u in urls]
        self.registries = list(registries) or [registry_url_for(u) for u in self.urls]
        self.timeout = timeout
        self.current = 0

    def order(self):
        """Indexes to try: the current manager first, then the rest in order."""
        n = len(self.urls)
        return [(self.current + i) % n for i in range(n)]

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
        req = urllib.request.Request(url, headers={"Accept": "application/json",
                                                   **({"If-None-Match": etag} if etag else {})})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                return resp.status, resp.headers.get("ETag"), json.loads(resp.read())
        except urllib.error.HTTPError as exc:
            if exc.code == 304:
                return 304, etag, None
            raise OSError(f"HTTP {exc.code}: {exc.read()[:200]!r}") from None


class FailoverRegistry:
    """RegistryClient calls against the current manager's registry, failing over on timeout."""

    def __init__(self, managers, timeout=2.0):
        self.managers = managers
        self._clients = [RegistryClient(u, timeout=timeout, retries=0)
                         for u in managers.registries]
        self._lock = threading.Lock()

    @property
    def url(self):
        return self.managers.registries[self.managers.current]

    def _call(self, method, *args, **kwargs):
        last = None
        for i in self.managers.order():
            try:
                result = getattr(self._clients[i], method)(*args, **kwargs)
            except RegistryUnavailableError as exc:
                last = exc
                continue
            self.managers.current = i
            return result
        raise last

    def register(self, *args, **kwargs):
        return self._call("register", *args, **kwargs)

    def unregister(self, *args, **kwargs):
        return self._call("unregister", *args, **kwargs)

    def lookup(self, *args, **kwargs):
        return self._call("lookup", *args, **kwargs)

    def connect(self, *args, **kwargs):
        return self._call("connect", *args, **kwargs)

    def release(self, *args, **kwargs):
        return self._call("release", *args, **kwargs)

    def close(self):
        for c in self._clients:
            c.close()
