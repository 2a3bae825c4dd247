"""HTTP sink: POST each batch as a JSON array of `{"stream","timestamp","data"}` objects.

One persistent connection per sink; a failed POST is retried once on a fresh connection, then
reported as SinkWriteError (the batch is counted as failed by the SinkSet)."""
import http.client
import json
from urllib.parse import urlsplit

from publishers.base import Sink
from publishers.exceptions import SinkConfigError, SinkWriteError


class HttpSink(Sink):
    """`@sink(type='http', publisher.url='http://host:port/path', timeout='5')`."""
    type = "http"

    def __init__(self, stream, options):
        super().__init__(stream, options)
        self.url = str(self.option("publisher.url") or self.option("url", required=True))
        parts = urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise SinkConfigError(f"@sink(type='http') on stream {stream}: url {self.url!r} "
                                  f"is not an http(s) URL")
        self._parts = parts
        self.timeout = self.float_option("timeout", 5.0)
        self._conn = None

    def _connection(self):
        if self._conn is None:
            cls = (http.client.HTTPSConnection if self._parts.scheme == "https"
                   else http.client.HTTPConnection)
            self._conn = cls(self._parts.hostname, self._parts.port, timeout=self.timeout)
        return self._conn

    def write_batch(self, events):
        body = json.dumps([{"stream": self.stream, "timestamp": ts, "data": list(row)}
                           for ts, row in events]).encode()
        path = self._parts.path or "/"
        if self._parts.query:
            path += "?" + self._parts.query
        for attempt in (1, 2):
            try:
                status = self._post(path, body)
                break
            except (OSError, http.client.HTTPException) as exc:
                self.close()
                if attempt == 2:
                    raise SinkWriteError(f"http sink {self.url}: {exc}") from None
        if status >= 300:
            raise SinkWriteError(f"http sink {self.url}: HTTP {status} for {len(events)} events")
        self.written += len(events)

    def _post(self, path, body):
        conn = self._connection()
        conn.request("POST", path, body, {"Content-Type": "application/json"})
        resp = conn.getresponse()
        resp.read()
        return resp.status

    def close(self):
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def describe(self):
        return {**super().describe(), "url": self.url}
