"""The worker node: its HTTP and ZeroMQ receivers, its deployed plans and its deployment sync.

w = Worker(load_config(overrides={...})).start()
w.status(); w.stop()
"""

import ipaddress
import logging
import threading
from dataclasses import dataclass

from cep.security import curve
from cep.security.exceptions import CurveKeyError
from cep.worker import ha
from cep.worker.config import worker_id
from cep.worker.exceptions import PlanDeployError, WorkerConfigError
from cep.worker.access import StatusGuard
from cep.worker.managers import FailoverRegistry, ManagerSet, worker_secret
from cep.worker.plumbing import close_marks
from cep.worker.ports import PortBook
from cep.worker.self_undeploy import SelfUndeploy
from cep.worker.status_api import status_blueprint
from cep.worker.supervisor import ThreadBook
from cep.worker.wal_api import wal_blueprint
from cep.worker.wal_book import WalBook
from cep.worker.sync import LocalPlanSync, ManagerSync
from cep.worker.worker_info import WorkerReporter
from cep.protocol.identity import default_host, machine_identity
from receivers.http_receiver import HttpServer, create_app
from receivers.limits import ReceiverLimits
from receivers.router import IngestRouter
from receivers.zmq_receiver import ZmqReceiver

log = logging.getLogger(__name__)


def _is_loopback(host):
    """True for 127.0.0.0/8, ::1 and localhost (a worker bound there advertises 127.0.0.1)."""
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _link_security(cfg):
    """The worker's ZeroMQ link security: CURVE keys (security.curve_dir, --curve-dir,
    CEP_CURVE_DIR) and, in distributed mode, the cluster secret for registry requests."""
    try:
        keys = curve.worker_keys(cfg)
    except CurveKeyError as exc:
        raise WorkerConfigError(str(exc)) from None
    secret = worker_secret(cfg) if cfg["worker.mode"] == "distributed" else None
    return curve.LinkSecurity(keys, secret)


def _stop_quietly(handle):
    """Stop a half-started plan; a failure while stopping is logged, not raised."""
    try:
        handle.stop()
    except Exception:  # noqa: BLE001
        log.exception("stopping a plan that failed to start")


@dataclass(frozen=True)
class Identity:
    """Who this worker is to the registry: id, advertised host, machine identity."""

    worker_id: str
    host: str
    machine: tuple


class Worker:
    """Receivers + plans (distributed or standalone) + deployment sync."""

    def __init__(self, cfg):
        self.cfg = cfg
        self.mode = cfg["worker.mode"]
        self.router = IngestRouter()
        self.plans = {}  # (tenant, name) -> StandalonePlan | DistributedPlan
        self.failed = {}  # (tenant, name) -> (version, message)
        self._lock = threading.RLock()
        self._stopped = False
        self.threads = ThreadBook()  # every long-running thread, supervised
        self.wal = WalBook.from_config(cfg)  # write-ahead logs of imported streams
        # per deployed plan, its duplicate marks and fences: they outlive a redeploy of the plan
        # (cep.worker.plumbing.build_sink_set)
        self.output_marks: dict = {}
        self.ha = ha.create(cfg)  # the standalone active/passive pair, or None
        self.links = _link_security(cfg)  # CURVE keys and cluster secret
        # status and metrics name every tenant: the cluster secret or a super admin's token
        self.guard = StatusGuard(self.links.secret)
        app = create_app(
            self.router,
            [status_blueprint(self, self.guard), wal_blueprint(self), *ha.blueprints(self.ha)],
            ReceiverLimits.from_config(cfg),
            ready=lambda: getattr(getattr(self, "sync", None), "synced", False),
            guard=self.guard.refused,
        )
        self.http = HttpServer(app, cfg["receivers.http_host"], cfg["receivers.http_port"])
        self.zmq = None
        if cfg["receivers.zmq_port"] >= 0:
            url = f"tcp://{cfg['receivers.zmq_host']}:{cfg['receivers.zmq_port']}"
            self.zmq = ZmqReceiver(self.router, url, keys=self.links.curve)
            self.threads.adopt(self.zmq, f"zmq-receiver {self.zmq.url}")
        for name in ("receivers.http_host", "receivers.zmq_host"):
            if not _is_loopback(cfg[name]):
                log.warning(
                    "%s is %s, not loopback: the worker's listeners take events and "
                    "publisher frames without authentication (ingest keys aside); see "
                    "SECURITY.md",
                    name,
                    cfg[name],
                )
        host = cfg["worker.advertised_host"] or (
            "127.0.0.1" if _is_loopback(cfg["receivers.http_host"]) else default_host()
        )
        self.identity = Identity(
            worker_id(cfg, self.http.port), host, tuple(machine_identity(host))
        )
        ha.attach(self)
        if self.wal is not None:  # where spouts send commit/replay requests (wal_api.py)
            self.wal.bind(self.identity.worker_id, f"http://{host}:{self.http.port}")
        self.managers = self.registry = self.ports = self.reporter = None
        self.self_undeploy = None
        if self.mode == "distributed":
            self.ports = PortBook(cfg["worker.state_dir"], self.identity.worker_id)
            self.managers = ManagerSet(
                cfg["managers.urls"],
                cfg["managers.registries"],
                cfg["managers.timeout"],
                self.links.secret,
            )
            self.guard.managers = self.managers  # super-admin tokens are checked there
            self.registry = FailoverRegistry(
                self.managers, cfg["managers.timeout"], security=self.links
            )
            self.self_undeploy = SelfUndeploy.from_config(cfg)
            self.sync = ManagerSync(
                self, self.managers, cfg["managers.poll_interval"], self.self_undeploy
            )
            self.reporter = WorkerReporter(self, self.registry, cfg["transport.heartbeat_interval"])
            self.threads.adopt(self.reporter, "worker-info")
        else:
            self.sync = LocalPlanSync(
                self, cfg["standalone.plans"], cfg["worker.tenant"], cfg["managers.poll_interval"]
            )
        self.threads.adopt(self.sync, "deployment-sync")

    @property
    def http_url(self):
        return self.http.url

    @property
    def zmq_url(self):
        return self.zmq.url if self.zmq else None

    def start(self):
        self.http.start()
        if self.zmq:
            self.zmq.start()
        if self.ha:
            self.ha.start()
        self.sync.start()
        if self.reporter:
            self.reporter.start()
        log.info(
            "worker %s (%s) up: HTTP %s, ZeroMQ %s",
            self.identity.worker_id,
            self.mode,
            self.http.url,
            self.zmq_url,
        )
        return self

    def stop(self):
        """Stop syncing, tear every plan down, close the receivers (idempotent)."""
        if self._stopped:
            return
        self._stopped = True
        self.sync.stop()
        if self.reporter:
            self.reporter.stop()
        if self.ha:
            self.ha.stop()
        with self._lock:
            for key in list(self.plans):
                self.undeploy(key, unregister=False)  # a restart takes the same ports again
            close_marks(self.output_marks)  # synced: a restart loads them
        if self.zmq:
            self.zmq.stop()
        self.http.stop()
        if self.registry:
            self.registry.close()

    # -- deployment --
    def apply(self, specs):
        """Make the deployed plans equal `specs`: start new, restart changed, stop removed."""
        wanted = {s.key: s for s in specs}
        with self._lock:
            for key in [k for k in self.plans if k not in wanted]:
                self.undeploy(key)
                # removed, not redeployed: forget its marks (and delete their file)
                close_marks(self.output_marks, key, remove=True)
                self.output_marks.pop(key, None)
            for key, spec in wanted.items():
                running = self.plans.get(key)
                if running is not None and running.spec.version == spec.version:
                    continue
                if self.failed.get(key, (None,))[0] == spec.version and running is None:
                    continue  # this version already failed; wait for a new one
                if running is not None:
                    self.undeploy(key)
                self.deploy(spec)

    def deploy(self, spec):
        handle = None
        try:
            handle = self._build(spec)
            handle.start()
        except Exception as exc:  # noqa: BLE001 - one plan's failure must not stop the sync
            if handle is not None:  # built, then refused while starting (e.g. a @source the
                _stop_quietly(handle)  # host policy refuses): release its ports and endpoints
            reason = (
                str(exc)
                if isinstance(exc, PlanDeployError)
                else f"plan {spec.name}: {type(exc).__name__}: {exc}"
            )
            self.failed[spec.key] = (spec.version, reason)
            log.error(
                "plan %s (tenant %s) not deployed: %s",
                spec.name,
                spec.tenant,
                reason,
                exc_info=not isinstance(exc, PlanDeployError),
            )
            return None
        self.failed.pop(spec.key, None)
        self.plans[spec.key] = handle
        log.info(
            "plan %s (tenant %s) version %s deployed (%s)",
            spec.name,
            spec.tenant,
            spec.version,
            self.mode,
        )
        return handle

    def _build(self, spec):
        if self.mode == "standalone":
            from cep.worker.standalone import StandalonePlan

            if self.ha is not None:
                return self.ha.build_plan(spec, self.router, self.cfg)
            return StandalonePlan(spec, self.router, self.cfg)
        from cep.worker.distributed import DistributedPlan

        return DistributedPlan(
            spec,
            self.router,
            self.registry,
            self.cfg,
            self.identity,
            self.ports,
            keys=self.links.curve,
            threads=self.threads,
            wal=self.wal,
            secret=self.links.secret,
            memory=self.output_marks,
        )

    def undeploy(self, key, unregister=True):
        handle = self.plans.pop(key, None)
        if handle is not None:
            handle.stop(unregister=unregister)
            log.info("plan %s (tenant %s) torn down", key[1], key[0])

    # -- status --
    def status(self):
        with self._lock:
            plans = {f"{t}/{n}": h.status() for (t, n), h in sorted(self.plans.items())}
            failed = {
                f"{t}/{n}": {"version": v, "error": m}
                for (t, n), (v, m) in sorted(self.failed.items())
            }
        return {
            "worker": self.identity.worker_id,
            "mode": self.mode,
            "host": self.identity.host,
            "roles": self.cfg["worker.roles"],
            "http": self.http.url,
            "zmq": self.zmq_url,
            "sync": self.sync.describe(),
            "plans": plans,
            "failed": failed,
            "threads": self.threads.describe(),
            "selfUndeploy": self.self_undeploy.describe() if self.self_undeploy else None,
            "ha": self.ha.describe() if self.ha else None,
            "workerInfo": (
                {"sent": self.reporter.sent, "last_error": self.reporter.last_error}
                if self.reporter
                else None
            ),
            "receivers": {
                "streams": self.router.counters(),
                "zmq_bad_messages": self.zmq.bad_messages if self.zmq else 0,
                "zmq_wal_waits": self.zmq.wal_waits if self.zmq else 0,
            },
        }
