"""The manager process's parts wired together: store, registry, topology manager, plans."""

import logging

from cep.security import curve
from manager.auth import AuthService
from manager.launcher import SparkLauncher
from manager.metrics_history import MetricsHistory
from manager.metrics_sampler import MetricsSampler
from manager.plans import PlanService
from manager.prometheus import ManagerMetrics
from manager.exceptions import ConfigError
from manager.policy import manager_policy
from manager.quotas import Quotas
from cep.protocol.identity import default_host
from manager.listeners import check_listeners, component_host
from manager.registry.service import RegistryService
from manager.settings import data_dir, load_manager_settings, spark_overrides
from manager.spark_status import SparkStatus, locator
from manager.store import open_store
from manager.topology_manager import TopologyManager
from manager.topology_recovery import MasterRecovery, master_probe

log = logging.getLogger("manager")
LOOPBACK = ("127.0.0.1", "localhost", "::1")


class Manager:
    """Build with settings (manager.settings); start() binds the registry and deploys plans."""

    def __init__(self, settings=None, compiler=None, launcher=None):
        self.settings = settings or load_manager_settings()
        s = self.settings
        self.store = open_store(data_dir(s), s["store.redis_url"] or None, s["store.redis_prefix"])
        self.auth = AuthService(s, data_dir(s))  # users, tokens, cluster secret
        self.auth.bootstrap()
        # ZeroMQ links: CURVE keys, else the cluster secret on registry requests
        self.links = curve.LinkSecurity(
            curve.manager_keys(s, data_dir(s)),
            self.auth.cluster_secret if s["security.auth"] else None,
            _transport_brokers(s),
        )
        self.registry = RegistryService(
            s["registry.port"],
            s["registry.bind_host"],
            s["registry.liveness"],
            s["registry.heartbeat_interval"],
            plan_exists=lambda t, p: self.plans.exists(t, p),
            security=self.links,
        )
        self.launcher = launcher or SparkLauncher(spark_overrides(s))
        self.launcher.security = self.links  # every topology it submits gets the links
        self.topologies = TopologyManager(
            self.launcher,
            self.registry.table,
            s["topology.kill_wait_secs"],
            s["topology.resubmit_interval"],
        )
        # topologies FAILED because their master was lost come back by themselves
        self.topologies.recovery = MasterRecovery(self.topologies, master_probe(self.launcher))
        self.host = s["manager.advertised_host"] or default_host()
        spark = getattr(self.launcher, "settings", None) or {}  # a test's fake launcher: none
        host = component_host(s["topology.component_host"], spark)
        self.plans = PlanService(
            self.store, self.topologies, self.registry.table, None, host, compiler
        )
        # no topology listens beyond loopback without CURVE (manager/listeners.py)
        self.plans.listener_check = lambda: check_listeners(
            host, spark, self.links.curve is not None
        )
        self.plans.component_config = {
            **_transport(s),
            "heartbeat_interval": s["registry.heartbeat_interval"],
            "table_rows": s["limits.table_rows"],
            "datasources": _datasources(),
            "scripts": {
                "python": s["scripts.python"],
                "timeout_ms": s["scripts.call_millis"],
                "memory_bytes": s["scripts.heap_mib"] << 20,
            },
        }
        self.spark = SparkStatus(locator(self.launcher))
        self.history = MetricsHistory()
        self.metrics = ManagerMetrics(self)
        self.sampler = MetricsSampler(
            self.topologies, self.history, s["metrics.sample_interval"], self.metrics.observe
        )
        self.plans.policy = manager_policy(s)
        try:
            self.quotas = Quotas.from_settings(s)  # per tenant (manager/quotas.py)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        self.plans.quotas = self.topologies.quotas = self.quotas
        self.plans.validate_secs = s["limits.validate_secs"]
        self.plans.transport = {
            "transport": s["topology.transport"].strip().lower(),
            "transportConnection": s["topology.nats_connection"],
        }
        self.plans.jetstream = _jetstream_view(s)
        self.plans.publisher_auth = (
            "curve" if self.links.curve is not None else "token" if self.links.secret else "none"
        )
        self.group = self._group(s)  # leader lease and fencing when Redis is shared
        self.started = False

    def _group(self, s):
        """A ManagerGroup when the store is Redis and ha.enabled; else None (standalone)."""
        if not (s["store.redis_url"] and s["ha.enabled"]):
            return None
        from manager.leader import ManagerGroup, manager_id

        group = ManagerGroup(
            s["store.redis_url"],
            s["store.redis_prefix"],
            s["manager.id"] or manager_id(data_dir(s)),
            s["ha.lease_ttl"],
            self._promote,
            self._demote,
            self._follow,
        )
        self.store.fence = group.writer  # every plan write checks the fencing token
        group.on_lead = self._lead
        self.plans.read_only = True  # until the lease is ours
        return group

    @property
    def role(self):
        return self.group.role if self.group is not None else "leader"  # alone: it leads

    def is_leader(self):
        """True when this manager may write: no group, or it holds an unexpired lease."""
        return self.group is None or self.group.is_leader()

    def leader_url(self):
        """Where writes go: this manager's URL when it leads, else the lease holder's."""
        if self.group is None:
            return None
        return self.group.leader_url()

    def set_url(self, url):
        """The REST URL other managers send clients to (known once the HTTP server bound)."""
        from urllib.parse import urlsplit

        self.plans.policy = self.plans.policy.with_reserved(urlsplit(url).port)
        if self.group is not None:
            self.group.url = self.settings["manager.advertised_url"] or url

    def _promote(self, token):
        """The lease is ours: deploy every plan, adopting the topologies that run already."""
        from manager.topology_recovery import MasterRecovery, master_probe

        self.topologies.forget_observed()
        self.topologies.recovery = MasterRecovery(self.topologies, master_probe(self.launcher))
        self.plans.read_only = False
        self._lead()
        self.plans.load_all(deploy=self._deploy)

    def _lead(self):
        """Every round while leading: new topologies get every member's registry (a list with
        a trailing comma is a group: cep/protocol/registry_group.py)."""
        self.plans.registry_url = ",".join(self.group.registries()) + ","

    def _demote(self):
        """The lease is gone: stop deploying (the topologies keep running) and follow."""
        self.plans.read_only = True
        self.topologies.shutdown(kill=False)
        self.topologies.forget_observed(every=True)

    def _follow(self):
        """A follower's round: the plans as the store has them, the running topologies."""
        self.plans.refresh()
        self.topologies.observe(self.plans.compiled)

    @property
    def registry_url(self):
        return f"tcp://{self.host}:{self.registry.port}"

    def start(self, deploy=True):
        """Bind the registry, then compile and deploy every stored plan."""
        self.registry.start()
        self.plans.registry_url = self.registry_url
        self.plans.policy = self.plans.policy.with_reserved(self.registry.port)  # a free one
        self._deploy = deploy
        if self.group is not None:  # leader: deploys in _promote; follower: reads in _follow
            self.group.registry = self.registry_url
            self.registry.peers = self.group.registries
            self.group.start()
        else:
            self.plans.load_all(deploy=deploy)
        if self.settings["metrics.sample_interval"] > 0:
            self.sampler.start()
        self.started = True
        log.info(
            "Manager started: registry %s, %d plan(s)", self.registry_url, len(self.plans.compiled)
        )
        if self.links.curve is None and self.settings["registry.bind_host"] not in LOOPBACK:
            log.warning(
                "security.curve is off: the registry (bound to %s), the event links and "
                "the task links are plain TCP; anyone on the network can read events "
                "and push to spouts and publisher ports (see SECURITY.md)",
                self.settings["registry.bind_host"],
            )
        return self

    def stop(self, kill_topologies=False):
        """Stop the registry and deploy threads; kill the topologies only when asked."""
        self.sampler.stop()
        if self.group is not None:
            kill_topologies = kill_topologies and self.group.role == "leader"  # never a follower
            self.group.stop(release=True)  # a follower takes over at once
        self.topologies.shutdown(kill=kill_topologies)
        self.registry.stop()
        if self.plans.jetstream is not None:
            self.plans.jetstream.close()
        self.store.close()
        self.auth.close()
        self.started = False

    def info(self):
        return {
            "registry": self.registry_url,
            "registryPort": self.registry.port,
            "host": self.host,
            "store": "redis" if self.settings["store.redis_url"] else "files",
            "plans": len(self.plans.compiled),
            "version": self.plans.version,
            "role": self.role,
            "leader": self.leader_url(),
            "registries": self.group.registries() if self.group else [self.registry_url],
        }


def _datasources():
    """The operator's datasources (conf/datasources.yaml), shipped to the Spark bolts so
    database tables resolve there as here; a malformed file stops the manager's start."""
    from cep.policy.datasources import as_config, load_datasources
    from cep.policy.exceptions import PolicyViolation

    try:
        return as_config(load_datasources())
    except PolicyViolation as exc:
        raise ConfigError(f"datasources: {exc}") from None


def _transport(s):
    """The topology components' transport settings: nothing for ZeroMQ; for NATS the name
    of the server's connection (checked here: it must resolve). Neither the plan text nor the
    topology spec holds its URL: it travels with the launch options (_transport_brokers).
    ConfigError for an unknown transport or connection."""
    from cep.policy.exceptions import PolicyViolation
    from connectors.connections import broker_connections
    from connectors.nats_transport import check_kind, transport_url

    try:
        kind = check_kind(s["topology.transport"])
        if kind == "zmq":
            return {}
        name = s["topology.nats_connection"]
        transport_url(name, broker_connections(s["connections.brokers"]))  # it must resolve
        return {"transport": kind, "nats_connection": name}
    except (ValueError, PolicyViolation) as exc:
        raise ConfigError(f"topology.transport: {exc}") from None


def _jetstream_view(s):
    """The NATS transport's streams view (manager/jetstream.py); None on ZeroMQ."""
    from connectors.connections import broker_connections
    from connectors.nats_transport import transport_url
    from manager.jetstream import JetStreamView

    if s["topology.transport"].strip().lower() != "nats":
        return None
    brokers = broker_connections(s["connections.brokers"])  # _transport checked them
    return JetStreamView(transport_url(s["topology.nats_connection"], brokers))


def _transport_brokers(s) -> tuple:
    """The (name, url) pairs of the broker connections the topologies' components use: the
    NATS transport's named connection, when there is one (curve.LinkSecurity.brokers)."""
    from cep.policy.exceptions import PolicyViolation
    from connectors.connections import broker_connections

    name = s["topology.nats_connection"]
    if s["topology.transport"].strip().lower() != "nats" or not name:
        return ()
    try:
        url = broker_connections(s["connections.brokers"]).get(name)
    except PolicyViolation:  # a bad entry: _transport says so, as a ConfigError
        return ()
    return ((name, url),) if url else ()
