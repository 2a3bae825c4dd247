"""One imported stream's connection to a receiver spout (CEP 4.0's per-stream CEP receiver).

`offer(events)` puts validated events in a bounded buffer and returns how many it refused
(buffer full). A sender thread looks a spout up in the registry, connects a PUSH socket
(ZMQ_IMMEDIATE: nothing is queued for a peer that is not connected), reports `connect`, and
sends frames of up to `batch_size` events, flushing partial frames after `flush_ms`. When the
spout goes away (socket monitor: disconnected, or no connection within `connect_timeout`) it
releases the connection, asks the registry again and reconnects; meanwhile events wait in the
buffer, and the metrics say how many. Frames already handed to a dead peer's socket are lost
(at-most-once, like CEP 4.0), but nothing still in the buffer is."""

import collections
import logging
import threading
import time

import zmq
from zmq.utils.monitor import recv_monitor_message

from cep.security import curve
from cep.protocol.exceptions import RegistryError
from cep.protocol.frames import encode_batch

log = logging.getLogger(__name__)


class SpoutConnection:
    """Bounded buffer + sender thread for one (tenant, plan, stream)."""

    def __init__(
        self,
        registry,
        tenant,
        plan,
        stream,
        client,
        machine=(),
        capacity=100000,
        batch_size=1000,
        flush_ms=5.0,
        reconnect_interval=1.0,
        connect_timeout=3.0,
        keys=None,
    ):
        self.registry, self.tenant, self.plan, self.stream = registry, tenant, plan, stream
        self.client, self.machine = client, list(machine)
        self.capacity, self.batch_size = capacity, batch_size
        self.flush_s, self.reconnect_interval = flush_ms / 1000.0, reconnect_interval
        self.connect_timeout = connect_timeout
        self.keys = keys  # CURVE keys of the link to the spout (None: off)
        self._buf = collections.deque()
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self._ctx = zmq.Context.instance()
        self._sock = self._monitor = self.endpoint = self.connection = None
        self.connected = False
        self._next_check = 0.0
        self.stats = collections.Counter()
        self.last_error = None
        self._thread = threading.Thread(
            target=self._run, daemon=True, name=f"inflow {tenant}/{plan}/{stream}"
        )

    # -- producer side (receiver threads) --
    def offer(self, events, wait=0.0):
        """Buffer `events`, waiting up to `wait` seconds for room; returns how many were
        refused because the buffer stayed full (ZeroMQ ingest waits, so back-pressure reaches
        the sender; HTTP waits briefly and reports refusals in its reply)."""
        deadline = time.monotonic() + wait
        taken = 0
        with self._cond:
            while True:
                room = self.capacity - len(self._buf)
                chunk = events[taken : taken + max(room, 0)]
                self._buf.extend(chunk)
                taken += len(chunk)
                self._cond.notify_all()
                left = deadline - time.monotonic()
                if taken == len(events) or left <= 0 or self._stop.is_set():
                    break
                self._cond.wait(min(left, 0.05))
        refused = len(events) - taken
        if refused:
            self.stats["refused"] += refused
        return refused

    @property
    def buffered(self):
        return len(self._buf)

    def start(self):
        self._thread.start()
        return self

    def stop(self, drain_timeout=2.0):
        """Send what is buffered (up to drain_timeout while connected), then disconnect."""
        deadline = time.monotonic() + drain_timeout
        while self._buf and self.connected and time.monotonic() < deadline:
            time.sleep(0.01)
        self._stop.set()
        with self._cond:
            self._cond.notify()
        self._thread.join(timeout=5)

    def metrics(self):
        return {
            "stream": self.stream,
            "connected": self.connected,
            "endpoint": self.endpoint,
            "buffered": len(self._buf),
            "capacity": self.capacity,
            "sent": self.stats["sent"],
            "frames": self.stats["frames"],
            "refused": self.stats["refused"],
            "reconnects": self.stats["reconnects"],
            "unencodable": self.stats["unencodable"],
            "last_error": self.last_error,
        }

    # -- sender thread --
    def _run(self):
        try:
            while not self._stop.is_set():
                if self._sock is None and not self._connect():
                    self._stop.wait(self.reconnect_interval)
                    continue
                self._check_monitor()
                if self._sock is not None:
                    self._send_some()
        finally:
            self._drop("worker stopping")

    def _connect(self):
        try:
            found = self.registry.lookup(
                "receiver", self.tenant, self.plan, stream=self.stream, machine=self.machine
            )
        except RegistryError as exc:
            self._note(f"lookup: {exc}")
            return False
        self.endpoint = found["endpoint"]
        sock = self._ctx.socket(zmq.PUSH)
        sock.setsockopt(zmq.LINGER, 0)
        sock.setsockopt(zmq.IMMEDIATE, 1)
        sock.setsockopt(zmq.SNDHWM, 100)
        curve.client(sock, self.keys)
        self._monitor = sock.get_monitor_socket(zmq.EVENT_CONNECTED | zmq.EVENT_DISCONNECTED)
        sock.connect(self.endpoint)
        self._sock, self._since = sock, time.monotonic()
        return True

    def _check_monitor(self):
        while self._monitor is not None and self._monitor.poll(0):
            event = recv_monitor_message(self._monitor)["event"]
            if event == zmq.EVENT_CONNECTED and not self.connected:
                self._on_connected()
            elif event == zmq.EVENT_DISCONNECTED:
                self._drop(f"spout {self.endpoint} went away")
                return
        if (
            not self.connected
            and self._sock is not None
            and time.monotonic() - self._since > self.connect_timeout
        ):
            self._drop(f"no connection to {self.endpoint} within {self.connect_timeout} s")
        elif self.connected and time.monotonic() >= self._next_check:
            self._next_check = time.monotonic() + self.reconnect_interval
            if not self._still_registered():  # its task restarted with a new socket
                self._drop(f"spout {self.endpoint} was replaced in the registry")

    def _still_registered(self):
        """False only when the registry answers and no longer lists the endpoint."""
        try:
            live = self.registry.status(self.tenant, self.plan)["receivers"]
        except (RegistryError, KeyError, TypeError):
            return True  # the registry is away; the connection itself looks fine
        return any(ep.get("endpoint") == self.endpoint for ep in live)

    def _on_connected(self):
        self.connected = True
        self._next_check = time.monotonic() + self.reconnect_interval
        try:
            self.connection = self.registry.connect(
                "receiver", self.tenant, self.plan, self.endpoint, self.client, stream=self.stream
            )
        except RegistryError as exc:  # the data path works; the status will catch up
            self._note(f"connect report: {exc}")
        log.info(
            "inflow %s/%s/%s connected to %s", self.tenant, self.plan, self.stream, self.endpoint
        )

    def _send_some(self):
        with self._cond:
            if len(self._buf) < self.batch_size:
                self._cond.wait(self.flush_s)
            n = min(len(self._buf), self.batch_size)
            batch = [self._buf.popleft() for _ in range(n)]
            if n:
                self._cond.notify_all()  # room for producers waiting in offer()
        if not batch:
            return
        frame, batch = self._encode(batch)
        try:
            self._sock.send(frame, zmq.NOBLOCK)
        except zmq.Again:  # not connected yet, or the spout is slow: keep the events
            with self._cond:
                self._buf.extendleft(reversed(batch))
            self._stop.wait(0.002)
            return
        self.stats["sent"] += n
        self.stats["frames"] += 1

    def _encode(self, batch):
        """(frame, batch); an event that does not encode (the receivers reject such events;
        this is the last guard) is dropped, counted as `unencodable` and logged, so that it
        cannot stop the stream."""
        try:
            return encode_batch(self.stream, batch), batch
        except (OverflowError, ValueError, TypeError) as exc:
            good = []
            for event in batch:
                try:
                    encode_batch(self.stream, [event])
                    good.append(event)
                except (OverflowError, ValueError, TypeError):
                    self.stats["unencodable"] += 1
            self._note(f"{len(batch) - len(good)} event(s) dropped, not encodable: {exc}")
            log.error("inflow %s/%s/%s: %s", self.tenant, self.plan, self.stream, self.last_error)
            return encode_batch(self.stream, good), good

    def _drop(self, why):
        if self._sock is None:
            return
        if self.connected and not self._stop.is_set():
            self.stats["reconnects"] += 1
            log.warning(
                "inflow %s/%s/%s: %s; %d events buffered",
                self.tenant,
                self.plan,
                self.stream,
                why,
                len(self._buf),
            )
        self._note(why)
        self._release()
        try:
            self._sock.disable_monitor()
        except zmq.ZMQError:
            pass
        self._monitor.close(0)
        self._sock.close(0)
        self._sock = self._monitor = None
        self.connected = False

    def _release(self):
        if self.connection is not None:
            try:
                self.registry.release(self.connection)
            except RegistryError as exc:
                log.info("release of %s failed: %s", self.connection, exc)
            self.connection = None

    def _note(self, message):
        self.last_error = message
