"""Per-tenant quotas: what one tenant may take of the shared manager and cluster.

Settings (conf/manager.yaml `quotas:` or CEP_QUOTAS_*; 0 means no limit):
- `quotas.plans`: execution plans per tenant (an add over it is refused: 403
  QuotaExceededError naming the numbers);
- `quotas.slots`: task slots (the sum of its topologies' instances) per tenant; a topology
  that would go over waits in `WAITING_FOR_QUOTA` with the numbers and deploys when the
  tenant's other topologies free enough slots; other tenants are unaffected;
- `quotas.backtests`: backtests of one tenant running at once (each is a child process with
  its own Spark JVM): one more is refused with 429 and Retry-After;
- `quotas.plan_bytes`, `quotas.queries`: per-tenant plan size and query limits, within the
  global `limits.plan_bytes` / `limits.queries`;
- `quotas.tenants`: overrides per tenant, e.g. `["7: plans=50, slots=32", "9: backtests=0"]`.
"""

import re
from dataclasses import dataclass, replace

from cep.protocol.settings import Setting
from manager.exceptions import ManagerError

QUOTA_SETTINGS = [
    Setting("quotas", "plans", int, 0, "execution plans per tenant (0: no limit)"),
    Setting(
        "quotas",
        "slots",
        int,
        0,
        "task slots per tenant; a topology over it waits in WAITING_FOR_QUOTA (0: no limit)",
    ),
    Setting("quotas", "backtests", int, 2, "backtests of one tenant at once (0: no limit)"),
    Setting(
        "quotas", "plan_bytes", int, 0, "largest plan of a tenant, in bytes (0: limits.plan_bytes)"
    ),
    Setting(
        "quotas", "queries", int, 0, "most queries in one plan of a tenant (0: limits.queries)"
    ),
    Setting(
        "quotas",
        "tenants",
        list,
        [],
        "per-tenant overrides: '<tenant>: plans=N, slots=N, backtests=N, plan_bytes=N, queries=N'",
    ),
]
FIELDS = ("plans", "slots", "backtests", "plan_bytes", "queries")
_ENTRY = re.compile(r"^\s*(-?\d+)\s*:\s*(.*)$")


class QuotaExceededError(ManagerError):
    """A tenant is at its quota: the message names the quota, the use and the setting."""

    status = 403

    def __init__(self, message, retry_after=None, status=None):
        super().__init__(message)
        self.retry_after = retry_after
        if status:
            self.status = status


@dataclass(frozen=True)
class Quota:
    plans: int = 0
    slots: int = 0
    backtests: int = 0
    plan_bytes: int = 0
    queries: int = 0


class Quotas:
    """The default quota and the per-tenant overrides."""

    def __init__(self, default=Quota(), overrides=None):
        self.default, self.overrides = default, dict(overrides or {})

    @classmethod
    def from_settings(cls, settings):
        default = Quota(*(int(settings[f"quotas.{f}"]) for f in FIELDS))
        overrides = {}
        for entry in settings["quotas.tenants"]:
            m = _ENTRY.match(str(entry))
            if not m:
                raise ValueError(f"quotas.tenants entry {entry!r} is not '<tenant>: key=N, ...'")
            values = {}
            for part in filter(None, (p.strip() for p in m.group(2).split(","))):
                key, _, value = part.partition("=")
                if key.strip() not in FIELDS or not value.strip().isdigit():
                    raise ValueError(
                        f"quotas.tenants entry {entry!r}: {part!r} is not one of "
                        f"{', '.join(FIELDS)} = a number"
                    )
                values[key.strip()] = int(value)
            overrides[int(m.group(1))] = replace(default, **values)
        return cls(default, overrides)

    def of(self, tenant):
        return self.overrides.get(int(tenant), self.default)

    def check_plans(self, tenant, count):
        """QuotaExceededError when `tenant`, with `count` plans, may not add one more."""
        limit = self.of(tenant).plans
        if limit and count >= limit:
            raise QuotaExceededError(
                f"tenant {tenant} has {count} execution plans; its quota "
                f"is {limit} (quotas.plans): remove one first"
            )

    def slots_over(self, tenant, used, wanted):
        """The reason a topology of `wanted` slots must wait, or None when it fits."""
        limit = self.of(tenant).slots
        if limit and used + wanted > limit:
            return (
                f"tenant {tenant} uses {used} of its {limit} task slots (quotas.slots); "
                f"this topology needs {wanted}: it deploys when its other topologies free "
                f"{used + wanted - limit}"
            )
        return None

    def check_backtests(self, tenant, running):
        limit = self.of(tenant).backtests
        if limit and running >= limit:
            raise QuotaExceededError(
                f"tenant {tenant} runs {running} backtests; its quota is "
                f"{limit} at once (quotas.backtests): retry when one ends",
                retry_after=5,
                status=429,
            )

    def policy_for(self, tenant, policy):
        """The host policy with this tenant's plan size and query quotas (never above it)."""
        q = self.of(tenant)
        changes = {}
        if q.plan_bytes and q.plan_bytes < policy.plan_bytes:
            changes["plan_bytes"] = q.plan_bytes
        if q.queries and q.queries < policy.queries:
            changes["queries"] = q.queries
        return replace(policy, **changes) if changes else policy
