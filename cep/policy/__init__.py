"""The host policy: what a tenant's plan may reach on the machines that run it.

- file sinks and sources stay under the file roots (`cep.policy.files`);
- HTTP sinks post only to allow-listed hosts, Redis sinks only through configured
  connections, connecting ZeroMQ sinks only to allow-listed hosts, and a plan's own
  listeners bind only allowed addresses (`cep.policy.hosts`);
- plan size, query count, window lengths and time spans, and table rows have maxima.

The manager checks a compiled plan with `check_plan` when it is added, edited or validated
(positioned errors naming the annotation); the worker checks each sink and source again when
it opens (`HostPolicy.file_roots_for`, `.http`, `.redis_url`). The compiler itself knows
nothing of this: the checks read the model's annotations and spans."""
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from cep.policy.exceptions import PlanLimitError, PlanPolicyError, PolicyError, PolicyViolation
from cep.policy.files import confine, open_confined, tenant_roots
from cep.policy.hosts import (
    HttpAllowList, check_bind, redis_connections, redis_url, zmq_endpoint,
)
from cep.policy.settings import MIB, POLICY_SETTINGS

__all__ = ["HostPolicy", "POLICY_SETTINGS", "PolicyError", "PolicyViolation", "PlanPolicyError",
           "PlanLimitError", "confine", "open_confined", "check_plan", "check_plan_size"]


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

    @classmethod
    def from_settings(cls, settings, data_dir):
        """From loaded settings holding POLICY_SETTINGS; `data_dir` gives the default root."""
        roots = tuple(settings["files.roots"]) or (f"{data_dir}/tenants/{{tenant}}/files",)
        return cls(roots, tuple(settings["sinks.http_allow"]),
                   redis_connections(settings["sinks.redis_connections"]),
                   tuple(settings["sinks.zmq_allow"]), tuple(settings["sinks.bind_hosts"]),
                   settings["limits.plan_bytes"], settings["limits.queries"],
                   settings["limits.window_length"],
                   int(settings["limits.window_secs"] * 1000), settings["limits.table_rows"])

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
