"""The reader thread of a source on a plain broker socket (connectors/mqtt_wire.py,
connectors/nats_wire.py): it reads 256 KB at a time, hands the bytes to the protocol's
parser, wakes the pump, and answers the parser's control frames; on any socket or protocol
error it logs, waits a second and connects again, until the source stops."""
import logging
import socket
import threading
from typing import Any, Callable

log = logging.getLogger("connectors")

READ = 262144


class WireReader:
    """Mixed into a source that has `key`, `_stop` and `_arrived` (threading.Event) and
    `_sock`, and defines `_connect_raw() -> (socket, first bytes already read)`."""

    key: str
    _stop: threading.Event
    _arrived: threading.Event
    _sock: Any

    def _connect_raw(self) -> "tuple[socket.socket, bytes]":
        raise NotImplementedError

    def _read_loop(self, kind: str, first: bytes,
                   parse: Callable[[bytearray, list], int],
                   control: Callable[[socket.socket, list], None]) -> None:
        """`parse(buf, frames) -> bytes used` queues the messages and collects control
        frames in `frames`; `control(sock, frames)` answers them (then they are cleared)."""
        buf, frames, sock = bytearray(first), [], self._sock
        while not self._stop.is_set():
            try:
                if sock is None:
                    sock, first = self._connect_raw()
                    self._sock, buf = sock, bytearray(first)
                data = sock.recv(READ)
                if not data:
                    raise ConnectionError("the broker closed the connection")
            except socket.timeout:
                continue
            except (OSError, ValueError) as exc:  # a protocol error too: reconnect after a pause
                if self._stop.is_set():
                    return
                log.warning("%s source %s: %s; reconnecting", kind, self.key, exc)
                if sock is not None:
                    sock.close()
                sock = self._sock = None
                self._stop.wait(1.0)
                continue
            buf += data
            del buf[:parse(buf, frames)]
            self._arrived.set()
            if frames:
                control(sock, frames)
                frames.clear()
