"""The host policy: what a tenant's plan may reach on the machines that run it.

- file sinks and sources stay under the file roots (`cep.policy.files`);
- HTTP sinks post only to allow-listed hosts, Redis sinks only through configured
  connections, connecting ZeroMQ sinks only to allow-listed hosts, and a plan's own
  listeners bind only allowed addresses (`cep.policy.hosts`);
- plan size, query count, window lengths and time spans, and table rows have maxima;
- database tables name only datasources their tenant may use (`cep.policy.datasources`,
  conf/datasources.yaml).

The manager checks a compiled plan with `check_plan` when it is added, edited or validated
(positioned errors naming the annotation); the worker checks each sink and source again when
it opens (`HostPolicy.file_roots_for`, `.http`, `.redis_url`). The compiler itself knows
nothing of this: the checks read the model's annotations and spans."""

from dataclasses import dataclass, field, replace
from urllib.parse import urlsplit

from cep.policy.exceptions import PlanLimitError, PlanPolicyError, PolicyError, PolicyViolation
from cep.policy.files import confine, open_confined, tenant_roots
from cep.policy.hosts import (
    HttpAllowList,
    check_bind,
    redis_connections,
    redis_url,
    zmq_endpoint,
)
from cep.policy.settings import MIB, POLICY_SETTINGS

__all__ = [
    "HostPolicy",
    "POLICY_SETTINGS",
    "PolicyError",
    "PolicyViolation",
    "PlanPolicyError",
    "PlanLimitError",
    "confine",
    "open_confined",
    "check_plan",
    "check_plan_size",
]


# the system's default ports: manager REST, registry, worker HTTP and ZeroMQ, Spark master
# and its web UIs
SYSTEM_PORTS = (7077, 8080, 8081, 8904, 9090, 9091, 9763)


@dataclass(frozen=True)
class HostPolicy:
    """The policy's values; build one with `from_settings`."""

    file_roots: tuple = ()  # templates, `{tenant}` replaced per tenant
    http_allow: tuple = ()
    redis: dict = field(default_factory=dict)  # name -> url
    zmq_allow: tuple = ()
    bind_hosts: tuple = ("127.0.0.1", "::1", "localhost")
    plan_bytes: int = MIB
    queries: int = 500
    window_length: int = 1_000_000
    window_millis: int = 7 * 86400 * 1000
    table_rows: int = 1_000_000
    python_scripts: bool = False
    script_millis: float = 1000.0
    script_heap_mib: int = 64
    # ports the system itself listens on (the manager's REST and registry, the worker's
    # receivers, Spark's master): a plan's own @source listener may not take them
    reserved_ports: tuple = SYSTEM_PORTS
    brokers: dict = field(default_factory=dict)  # connections.brokers: name -> url

    def with_reserved(self, *ports):
        """This policy with more reserved ports (a process's own, from its settings)."""
        extra = tuple(int(p) for p in ports if p and int(p) > 0)
        return replace(self, reserved_ports=tuple(sorted(set(self.reserved_ports + extra))))

    @classmethod
    def from_settings(cls, settings, data_dir):
        """From loaded settings holding POLICY_SETTINGS; `data_dir` gives the default root."""
        roots = tuple(settings["files.roots"]) or (f"{data_dir}/tenants/{{tenant}}/files",)
        return cls(
            roots,
            tuple(settings["sinks.http_allow"]),
            redis_connections(settings["sinks.redis_connections"]),
            tuple(settings["sinks.zmq_allow"]),
            tuple(settings["sinks.bind_hosts"]),
            settings["limits.plan_bytes"],
            settings["limits.queries"],
            settings["limits.window_length"],
            int(settings["limits.window_secs"] * 1000),
            settings["limits.table_rows"],
            settings["scripts.python"],
            settings["scripts.call_millis"],
            settings["scripts.heap_mib"],
            brokers=_broker_connections(settings),
        )

    def apply_script_limits(self):
        """Make this process's script functions follow the policy (cep.engine.scripts)."""
        from cep.engine import scripts

        scripts.configure(self.script_millis, self.script_heap_mib * MIB, self.python_scripts)

    def file_roots_for(self, tenant):
        """The real root folders of one tenant."""
        return tenant_roots(self.file_roots, tenant)

    @property
    def http(self):
        return HttpAllowList(self.http_allow)

    def redis_url(self, options):
        return redis_url(options, self.redis)

    def zmq_sink(self, options):
        """Check a ZeroMQ sink's url: a connect goes to sinks.zmq_allow hosts, a bind to
        sinks.bind_hosts; PolicyViolation otherwise."""
        url = options.get("url")
        if not url:
            return
        host, port = zmq_endpoint(url)
        if str(options.get("mode", "bind")).lower() == "connect":
            allow = HttpAllowList(self.zmq_allow, label="ZeroMQ sink allow-list (sinks.zmq_allow)")
            allow.addresses(f"http://{_bracket(host)}:{port}/")
        else:
            check_bind(host, self.bind_hosts)

    def listener(self, kind, options):
        """Check where a plan's own source listener binds: @source(type='zmq', url=...) or
        @source(type='http', port=..., host=... | receiver.url=...)."""
        if kind == "zmq" and options.get("url"):
            check_bind(zmq_endpoint(options["url"])[0], self.bind_hosts)
        elif kind == "http":
            url = options.get("receiver.url")
            host = urlsplit(url).hostname if url else options.get("host")
            if url or options.get("port") not in (None, "", "0"):
                check_bind(host, self.bind_hosts)
            self._own_port(urlsplit(url).port if url else options.get("port"))
        if kind == "zmq" and options.get("url"):
            self._own_port(zmq_endpoint(options["url"])[1])

    def _own_port(self, port):
        """PolicyViolation when a plan listener asks for a port the system uses or a
        privileged one (below 1024)."""
        try:
            port = int(port)
        except (TypeError, ValueError):
            return  # none given (0 or empty: a free port) or not a number (checked elsewhere)
        if port == 0:
            return
        if port < 1024:
            raise PolicyViolation(
                f"port {port} is privileged (below 1024); a plan's "
                f"listener needs a port of 1024 or more"
            )
        if port in self.reserved_ports:
            raise PolicyViolation(
                f"port {port} is one the CEP system itself uses (the "
                f"manager, the registry, a worker or Spark); choose another"
            )


def _broker_connections(settings):
    from connectors.connections import broker_connections

    try:
        entries = settings["connections.brokers"]
    except KeyError:  # settings of a schema without the key
        entries = []
    return broker_connections(entries)


def _bracket(host):
    return f"[{host}]" if ":" in host else host


def check_plan(plan, policy, tenant, resolve=True):
    """Raise PlanPolicyError (positioned) when `plan` breaks `policy` for `tenant`."""
    from cep.policy.plan_check import check_plan as _check

    _check(plan, policy, tenant, resolve)


def check_plan_size(text, policy):
    """Raise PlanLimitError when the plan text is larger than the policy allows."""
    from cep.policy.plan_check import check_plan_size as _check

    _check(text, policy)
