"""The publisher bolt (CEP 4.0's EventPublisherBolt): sends the exported streams to a CEP worker.

It asks the endpoint registry for a CEP publisher of its plan (preferring its own machine, then
the fewest open connections), connects a ZeroMQ PUSH socket, reports the connection, and sends
every batch as one frame `[1, stream, [[ts, [values]], ...]]` (manager/registry/PROTOCOL.md).
The connection is released when the bolt closes or its endpoint stops taking frames.

Config keys: registry, tenant, plan, streams ({stream id: [attribute names]}), host,
retry_interval (s between lookups while no worker publisher exists, default 1),
send_timeout_ms (default 2000), buffer_limit (events kept while unconnected, default 100000).
"""
import logging
import threading

import zmq

from manager.exceptions import RegistryError
from manager.registry.client import RegistryClient
from manager.registry.identity import machine_identity
from manager.registry.wire import encode_batch
from topology.component import Bolt

log = logging.getLogger(__name__)


class PublisherBolt(Bolt):
    """Rows `(ts, *values)` in, msgpack frames out to one worker publisher."""

    def prepare(self, context, collector):
        super().prepare(context, collector)
        cfg = self.config
        self.tenant, self.plan = int(cfg["tenant"]), cfg["plan"]
        self.client_id = f"{context.topology_name}:{context.component_id}:{context.index}"
        self.label = f"[{self.tenant}:{self.plan}:EventPublisherBolt:{context.index}]"
        self.machine = machine_identity(cfg.get("host"))
        self.registry = RegistryClient(cfg["registry"])
        self.retry_interval = float(cfg.get("retry_interval", 1.0))
        self.send_timeout = int(cfg.get("send_timeout_ms", 2000))
        self.buffer_limit = int(cfg.get("buffer_limit", 100000))
        self.sock = self.connection = self.endpoint = None
        self.pending = []  # frames (and their sizes) waiting for a connection
        self.pending_events = self.sent = self.dropped = 0
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._wake = threading.Event()
        self._connector = threading.Thread(target=self._keep_connected, daemon=True,
                                           name=f"{self.client_id} connector")
        self._connector.start()

    def _keep_connected(self):
        """Until cleanup: (re)connect when unconnected, then flush what was buffered."""
        while not self._closed.is_set():
            with self._lock:
                if self.sock is None and self._connect():
                    self._flush()
            self._wake.wait(self.retry_interval)
            self._wake.clear()

    def _connect(self):
        """Look up a worker publisher and connect; False when none is registered yet."""
        try:
            ep = self.registry.lookup("publisher", self.tenant, self.plan, machine=self.machine)
            sock = zmq.Context.instance().socket(zmq.PUSH)
            sock.setsockopt(zmq.LINGER, 1000)
            sock.setsockopt(zmq.SNDTIMEO, self.send_timeout)
            sock.connect(ep["endpoint"])
            self.connection = self.registry.connect("publisher", self.tenant, self.plan,
                                                    ep["endpoint"], client=self.client_id)
        except RegistryError as exc:
            log.info("%s no CEP publisher yet: %s", self.label, exc)
            return False
        self.sock, self.endpoint = sock, ep["endpoint"]
        log.info("%s connected to CEP publisher %s", self.label, self.endpoint)
        return True

    def execute(self, batch):
        frame = encode_batch(batch.stream, [[r[0], list(r[1:])] for r in batch.rows])
        with self._lock:
            self.pending.append((frame, len(batch.rows)))
            self.pending_events += len(batch.rows)
            self._trim()
            if self.sock is not None:
                self._flush()

    def _flush(self):
        while self.pending:
            frame, n = self.pending[0]
            try:
                self.sock.send(frame)
            except zmq.Again:
                log.warning("%s CEP publisher %s does not take frames; reconnecting",
                            self.label, self.endpoint)
                self._disconnect()
                self._wake.set()
                return
            self.pending.pop(0)
            self.pending_events -= n
            self.sent += n

    def _trim(self):
        while self.pending_events > self.buffer_limit and self.pending:
            _, n = self.pending.pop(0)
            self.pending_events -= n
            self.dropped += n
            log.warning("%s buffer full: dropped %d event(s) (no CEP publisher)", self.label, n)

    def _disconnect(self):
        if self.connection is not None:
            try:
                self.registry.release(self.connection)
            except RegistryError as exc:
                log.info("%s release failed: %s", self.label, exc)
        if self.sock is not None:
            self.sock.close(0)
        self.sock = self.connection = self.endpoint = None

    def cleanup(self):
        self._closed.set()
        self._wake.set()
        self._connector.join(timeout=self.retry_interval + 5)
        with self._lock:
            self._disconnect()
        self.registry.close()
