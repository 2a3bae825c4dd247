"""The HTTP server of the manager and the workers: cheroot (CherryPy's production WSGI server)
on a thread, instead of Werkzeug's development server.

cheroot keeps a fixed pool of worker threads (`threads`) and a bounded accept queue
(`queue`), drops a connection that sends nothing for `timeout` seconds (a slow client holds a
thread at most that long), serves TLS with a certificate and key, and names itself with a
fixed `Server: sparkcep` header: no framework or Python version to fingerprint."""

import logging
import threading
from typing import Any, Optional

from cheroot import wsgi

log = logging.getLogger(__name__)
SERVER_NAME = "sparkcep"


class ProductionServer:
    """Serve a WSGI app on host:port (0: a free port) from a daemon thread."""

    def __init__(
        self,
        app: Any,
        host: str = "127.0.0.1",
        port: int = 0,
        threads: int = 16,
        timeout: float = 30,
        queue: int = 256,
        tls: Optional[tuple[str, ...]] = None,
        name: str = "http",
    ) -> None:
        self.host = host
        # cheroot's annotations say an int timeout; its socket timeouts take float seconds
        self.server = wsgi.Server(
            (host, port),
            app,
            numthreads=threads,
            timeout=timeout,  # type: ignore[arg-type]
            request_queue_size=queue,
            server_name=SERVER_NAME,
        )
        self.server.version = SERVER_NAME
        if tls:
            from cheroot.ssl.builtin import BuiltinSSLAdapter

            self.server.ssl_adapter = BuiltinSSLAdapter(*tls)
        self.server.prepare()  # binds now: the port is known, a taken port fails here
        self.port: int = self.server.bind_addr[1]
        self._thread = threading.Thread(
            target=self.server.serve, daemon=True, name=f"{name}-{self.port}"
        )

    @property
    def server_port(self) -> int:
        return self.port

    def start(self) -> "ProductionServer":
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the listening socket (also when never started)."""
        self.server.stop()
        if self._thread.is_alive():
            self._thread.join(timeout=10)
