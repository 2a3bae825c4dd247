"""A plan served in distributed mode: imported streams go to receiver spouts (one connection
each, chosen by the registry), and a publisher service registered with the registry takes the
exported streams from the publisher bolts and writes them to the sinks.

With the manager's `topology.transport: nats` (the plan's deployment entry says so) both go
through NATS JetStream instead (connectors/nats_transport.py): each imported stream is a
NatsInflow publishing to the plan's inflow subject, and a NatsPublisherService reads the
plan's outflow subject; neither registers with the registry."""

import logging

from cep.policy.exceptions import PolicyViolation
from cep.worker.config import host_policy, marks_dir
from cep.worker.exceptions import PlanDeployError
from cep.worker.inflow import SpoutConnection
from cep.worker.logged_inflow import LoggedSpoutConnection
from cep.worker.nats_inflow import NatsInflow
from cep.worker.plumbing import build_sink_set, start_sources, stop_all, stream_key
from cep.worker.supervisor import adopt
from cep.protocol.registry_client import Heartbeat
from cep.security import curve
from connectors.nats_transport import transport_url
from publishers.nats_service import NatsPublisherService
from publishers.service import PublisherService

log = logging.getLogger(__name__)


class DistributedPlan:
    """Inflow connections and (for the publisher role) the plan's publisher service."""

    mode = "distributed"

    def __init__(
        self,
        spec,
        router,
        registry,
        cfg,
        identity,
        ports=None,
        keys=None,
        threads=None,
        wal=None,
        secret=None,
        memory=None,
    ):
        self.spec, self.router, self.registry = spec, router, registry
        self.threads = threads  # the worker's ThreadBook: every thread here is supervised
        self.ports, self.port_key = ports, f"{spec.tenant}/{spec.name}"
        self.cfg, self.identity = cfg, identity
        self.keys = keys  # CURVE keys of the spout and publisher links (None: off)
        self.wal = wal  # cep.worker.wal_book.WalBook (None: wal.enabled off, at-most-once)
        roles = cfg["worker.roles"]
        self.inflows = {}
        self.service = self.heartbeat = None
        self.nats_url = self._nats_url() if spec.transport == "nats" else None
        marks = marks_dir(cfg, identity.worker_id)  # duplicate marks kept across restarts
        try:
            if "receiver" in roles:
                for s in spec.imported:
                    self.inflows[s.stream] = self._inflow(s.stream)
            if "publisher" in roles and spec.exported and self.nats_url:
                self.service = adopt(
                    threads,
                    NatsPublisherService(
                        build_sink_set(cfg, spec, memory, marks),
                        self.nats_url,
                        spec.tenant,
                        spec.name,
                    ),
                    f"publisher {self.port_key}",
                )
            elif "publisher" in roles and spec.exported:
                port = ports.get(self.port_key) if ports else 0
                # without CURVE, the cluster secret gives the plan's bolts a token of their own
                token = (
                    curve.plan_token(secret, spec.tenant, spec.name)
                    if secret and spec.publisher_auth == "token"
                    else None
                )
                self.service = PublisherService(
                    build_sink_set(cfg, spec, memory, marks),
                    cfg["receivers.http_host"],
                    port,
                    keys=keys,
                    token=token,
                    domain=self.port_key,
                )
                adopt(threads, self.service, f"publisher {self.port_key}")
                if ports:
                    self._remember_port(ports)
        except BaseException:
            self._close_logs()  # opened logs are locked: a later version must open them
            raise
        self.sources = []

    def _nats_url(self):
        """The NATS transport's server (the manager names the connection; this worker's
        connections.brokers holds its URL); PlanDeployError when it is not configured here."""
        try:
            return transport_url(self.spec.transport_connection, host_policy(self.cfg).brokers)
        except PolicyViolation as exc:
            raise PlanDeployError(f"plan {self.spec.name}: {exc}") from None

    def _close_logs(self):
        for conn in self.inflows.values():
            if getattr(conn, "wal", None) is not None:
                conn.wal.close()

    def _remember_port(self, ports):
        """Keep the service's port for a restart; a failure here closes the service's socket
        (it is bound already) before the error goes on (no leaked listener)."""
        try:
            ports.put(self.port_key, self.service.port)
        except BaseException:
            self.service.stop()
            raise

    def _inflow(self, stream):
        c, cls, logged = self.cfg, SpoutConnection, {}
        if self.nats_url:  # JetStream keeps what it confirmed: no write-ahead log needed
            return adopt(
                self.threads,
                NatsInflow(
                    self.nats_url,
                    self.spec.tenant,
                    self.spec.name,
                    stream,
                    self.identity.worker_id,
                    capacity=c["transport.buffer_events"],
                    batch_size=c["transport.batch_size"],
                    reconnect_interval=c["transport.reconnect_interval"],
                ),
                f"inflow {self.port_key}/{stream}",
            )
        if self.wal is not None:  # accepted events are logged first
            cls, t, p = LoggedSpoutConnection, self.spec.tenant, self.spec.name
            wal = self.wal.open(t, p, stream)
            logged = {
                "wal": wal,
                "control": self.wal.control,
                "receiver_id": self.wal.receiver_id(
                    self.identity.worker_id, t, p, stream, wal.log_id
                ),
            }
        return adopt(
            self.threads,
            cls(
                self.registry,
                self.spec.tenant,
                self.spec.name,
                stream,
                self.identity.worker_id,
                self.identity.machine,
                capacity=c["transport.buffer_events"],
                batch_size=c["transport.batch_size"],
                flush_ms=c["transport.flush_ms"],
                reconnect_interval=c["transport.reconnect_interval"],
                keys=self.keys,
                **logged,
            ),
            f"inflow {self.port_key}/{stream}",
        )

    def start(self):
        for s in self.spec.imported:
            if s.stream in self.inflows:
                self.inflows[s.stream].start()
                inflow = self.inflows[s.stream]
                self.router.register(
                    stream_key(self.spec, s.stream),
                    s.definition,
                    inflow.offer,
                    getattr(inflow, "progress", None),
                )
        if self.service is not None:
            self.service.start()
        if self.service is not None and self.nats_url is None:
            self.heartbeat = adopt(
                self.threads,
                Heartbeat(
                    self.registry,
                    self.cfg["transport.heartbeat_interval"],
                    kind="publisher",
                    tenant=self.spec.tenant,
                    plan=self.spec.name,
                    host=self.identity.host,
                    port=self.service.port,
                    machine=self.identity.machine,
                    worker=self.identity.worker_id,
                ),
                f"heartbeat {self.port_key}",
            ).start()
        if self.inflows:
            self.sources = start_sources(self.spec, self.router, self.cfg, self.threads)
        return self

    def stop(self, unregister=True):
        """Tear down; `unregister=False` (worker shutdown, not plan removal) leaves the publisher
        endpoint registered, so bolts stay connected to the port a restart binds again."""
        self.router.unregister_plan(str(self.spec.tenant), self.spec.name)
        stop_all(self.sources)
        stop_all(self.inflows.values())
        if self.heartbeat is not None:
            self.heartbeat.stop(unregister=unregister)
        if self.service is not None:
            self.service.stop()

    def status(self):
        inflow = [c.metrics() for c in self.inflows.values()]
        connected = sum(1 for m in inflow if m["connected"])
        return {
            "mode": self.mode,
            "version": self.spec.version,
            "inflow": {"required": len(inflow), "connected": connected, "streams": inflow},
            "outflow": self.service.metrics() if self.service else None,
            "sources": [s.describe() for s in self.sources],
        }
