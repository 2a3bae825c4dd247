"""The reader thread of a source on a plain broker socket (connectors/mqtt_wire.py,
connectors/nats_wire.py): it reads 256 KB at a time, hands the bytes to the protocol's
parser, wakes the pump, and answers the parser's control frames; on any socket or protocol
error it logs, waits a second and connects again, until the source stops.

The parsers queue runs, `(topic or subject, [payload, ...])` for consecutive messages of one
topic, and `take` hands the pump up to `batch.size` payloads of them: a queue operation per
run, not per message."""

import logging
import socket
import threading
from typing import Any, Callable

log = logging.getLogger("connectors")

READ = 262144


def take(queue, limit: int) -> "tuple[list, list]":
    """Up to `limit` payloads off the front of a queue of runs (a run longer than the rest
    is cut: its tail goes back to the front), and `(topic, count)` of the runs they came
    from (for naming a message that is not an event). Only the pump takes from the front;
    the reader thread appends at the back, so deque's atomic operations suffice."""
    payloads, runs = [], []
    while queue and len(payloads) < limit:
        topic, items = queue.popleft()
        room = limit - len(payloads)
        if len(items) > room:
            queue.appendleft((topic, items[room:]))
            items = items[:room]
        payloads += items
        runs.append((topic, len(items)))
    return payloads, runs


def topic_of(runs, index: int) -> bytes:
    """The topic of payload `index` of a `take`."""
    for topic, count in runs:
        if index < count:
            return topic
        index -= count
    return b""


class WireReader:
    """Mixed into a source that has `key`, `_stop` and `_arrived` (threading.Event) and
    `_sock` and `_queue` (a deque of runs), and defines `_connect_raw() -> (socket, first
    bytes already read)`."""

    key: str
    _stop: threading.Event
    _arrived: threading.Event
    _sock: Any
    _queue: Any

    def _connect_raw(self) -> "tuple[socket.socket, bytes]":
        raise NotImplementedError

    def _read_loop(
        self,
        kind: str,
        first: bytes,
        parse: Callable[[bytearray, list, list], int],
        control: Callable[[socket.socket, list], None],
    ) -> None:
        """`parse(buf, runs, frames) -> bytes used` appends the messages to `runs` (queued
        on `_queue`) and collects control frames in `frames`; `control(sock, frames)` answers
        them (then they are cleared)."""
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
            runs = []
            del buf[: parse(buf, runs, frames)]
            if runs:  # one queue operation a read (the pump takes from the other end)
                self._queue.extend(runs)
                self._arrived.set()
            if frames:
                control(sock, frames)
                frames.clear()
