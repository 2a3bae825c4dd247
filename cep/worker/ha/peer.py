"""Talking to the other node of the pair over HTTP: heartbeats (JSON), state snapshots and
forwarded input (msgpack). Every call carries the cluster secret (X-CEP-Cluster-Secret); a
failure becomes a PeerError that says what the peer is or is not."""

import http.client
import json
import threading
import urllib.parse


from cep.protocol import frames
from cep.security import cluster_secret
from cep.worker.ha.exceptions import PeerError

PROTOCOL = 1


class PeerClient:
    """Calls to the peer at `url` (http://host:port); one kept-alive connection per thread."""

    def __init__(self, url, secret, timeout=2.0):
        self.url = url.rstrip("/")
        parts = urllib.parse.urlsplit(self.url)
        self.host, self.port = parts.hostname, parts.port or 80
        self.secret, self.timeout = secret, timeout
        self._local = threading.local()

    def heartbeat(self, message):
        """POST our state; the peer's state back (a dict with `protocol`)."""
        body = self._call("POST", "/ha/heartbeat", json.dumps(message).encode(), "application/json")
        try:
            reply = json.loads(body)
        except ValueError:
            reply = None
        if not isinstance(reply, dict) or reply.get("protocol") != PROTOCOL:
            raise PeerError(
                f"peer {self.url} answered /ha/heartbeat with something that is "
                f"not the HA protocol (version {PROTOCOL}): is it a CEP worker "
                f"with --ha-peer?"
            )
        return reply

    def snapshot(self, key, digest):
        """The compressed state of plan `key` ("tenant/name") at the active."""
        tenant, name = key.split("/", 1)
        path = (
            f"/ha/snapshot/{urllib.parse.quote(tenant)}/{urllib.parse.quote(name)}"
            f"?digest={urllib.parse.quote(digest)}"
        )
        return self._call("GET", path, None, None, timeout=max(self.timeout, 30.0))

    def forward(self, items):
        """Send [[key, seq, stream, events], ...]; returns when the peer took them."""
        self._call("POST", "/ha/input", frames.encode_ha_input(items), "application/msgpack")

    def _call(self, method, path, body, ctype, timeout=None):
        headers = {cluster_secret.HEADER: self.secret or ""}
        if ctype:
            headers["Content-Type"] = ctype
        for attempt in (0, 1):  # a kept-alive connection the peer closed: once more, fresh
            conn = self._conn(timeout)
            try:
                conn.request(method, path, body=body, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                break
            except (OSError, http.client.HTTPException) as exc:
                self._drop()
                if attempt:
                    raise PeerError(
                        f"peer {self.url} not reachable: {type(exc).__name__}: {exc}"
                    ) from None
        if resp.status == 200:
            return data
        raise PeerError(_explain(self.url, path.split("?")[0], resp.status, data))

    def _conn(self, timeout):
        want = timeout or self.timeout  # a heartbeat never waits as long as a snapshot may
        conn = getattr(self._local, "conn", None)
        if conn is None or conn.timeout != want:
            self._drop()
            conn = self._local.conn = http.client.HTTPConnection(self.host, self.port, timeout=want)
        return conn

    def _drop(self):
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
        self._local.conn = None


def _explain(url, path, status, data):
    """A clear reason for a non-200 answer (never the peer's whole body)."""
    try:
        message = json.loads(data).get("error")
    except (ValueError, AttributeError):
        message = None
    if status == 401:
        return (
            f"peer {url} refused our cluster secret (HTTP 401 on {path}): both nodes "
            f"need the same secret (--cluster-secret-file or CEP_CLUSTER_SECRET)"
        )
    if status == 404 and not message:
        return f"peer {url} is not a CEP worker with HA (HTTP 404 on {path}): check --ha-peer"
    return f"peer {url} answered HTTP {status} on {path}: {str(message or '')[:300]}"
