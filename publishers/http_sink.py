"""HTTP sink: POST each batch as a JSON array of `{"stream","timestamp","data"}` objects.

One persistent connection per sink; a failed POST is retried once on a fresh connection, then
reported as SinkWriteError (the batch is counted as failed by the SinkSet). With `allow` (the
host policy's HttpAllowList, cep.policy.hosts) the URL's host is checked when the sink is
built and every time it connects, and the connection goes to an address that passed the check
(no second name lookup). NaN and infinities are sent as null (valid JSON). With a `@map` the
body is the mapped message: one POST per batch when the map groups events (a JSON array, one
`<events>` document), else one POST per event."""

import http.client
import socket
from urllib.parse import urlsplit

from cep.policy import PolicyViolation
from publishers.base import Sink, dumps_events, message_text
from publishers.exceptions import SinkConfigError, SinkWriteError

_CONTENT_TYPES = {
    "json": "application/json",
    "passthrough": "application/json",
    "keyvalue": "application/json",
    "xml": "application/xml",
    "text": "text/plain",
    "csv": "text/csv",
}


class HttpSink(Sink):
    """`@sink(type='http', publisher.url='http://host:port/path', timeout='5')`."""

    type = "http"

    def __init__(self, stream, options, allow=None):
        super().__init__(stream, options)
        self.url = str(self.option("publisher.url") or self.option("url", required=True))
        parts = urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise SinkConfigError(
                f"@sink(type='http') on stream {stream}: url {self.url!r} is not an http(s) URL"
            )
        self._parts = parts
        self.allow = allow
        if allow is not None:
            try:
                allow.addresses(self.url)
            except PolicyViolation as exc:
                raise SinkConfigError(f"@sink(type='http') on stream {stream}: {exc}") from None
        self.timeout = self.float_option("timeout", 5.0)
        self._conn = None

    def _connection(self):
        if self._conn is None:
            https = self._parts.scheme == "https"
            cls = http.client.HTTPSConnection if https else http.client.HTTPConnection
            conn = cls(self._parts.hostname, self._parts.port, timeout=self.timeout)
            if self.allow is not None:
                _pin(conn, self.allow.addresses(self.url)[0][1], https)
            self._conn = conn
        return self._conn

    def write_batch(self, events):
        messages = self.messages(events)
        if messages is None:
            self._send(dumps_events(self.stream, events).encode(), len(events), "application/json")
        else:
            ctype = _CONTENT_TYPES.get(self.mapper.type, "text/plain")
            for m in messages:
                self._send(message_text(m).encode(), len(events), ctype)
        self.written += len(events)

    def _send(self, body, n, ctype):
        path = self._parts.path or "/"
        if self._parts.query:
            path += "?" + self._parts.query
        for attempt in (1, 2):
            try:
                status = self._post(path, body, ctype)
                break
            except PolicyViolation as exc:
                self.close()
                raise SinkWriteError(f"http sink {self.url}: {exc}") from None
            except (OSError, http.client.HTTPException) as exc:
                self.close()
                if attempt == 2:
                    raise SinkWriteError(f"http sink {self.url}: {exc}") from None
        if status >= 300:
            raise SinkWriteError(f"http sink {self.url}: HTTP {status} for {n} events")

    def _post(self, path, body, ctype="application/json"):
        conn = self._connection()
        conn.request("POST", path, body, {"Content-Type": ctype})
        resp = conn.getresponse()
        resp.read()
        return resp.status

    def close(self):
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def describe(self):
        return {**super().describe(), "url": self.url}


def _pin(conn, address, https):
    """Make `conn` connect to `address` (checked) while keeping its Host header and TLS name."""

    def connect():
        conn.sock = socket.create_connection((address, conn.port), conn.timeout)
        conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if https:
            conn.sock = conn._context.wrap_socket(conn.sock, server_hostname=conn.host)

    conn.connect = connect
