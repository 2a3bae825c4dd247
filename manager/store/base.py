"""The plan store interface and tenant/name checks shared by its implementations."""

import re

from manager.exceptions import BadTenantError, PlanNotFoundError, StoreError

SUPER_TENANT = -1234
NAME_RE = re.compile(r"^[A-Za-z0-9_.\-]{1,100}$")


TENANT_RE = re.compile(r"-?[0-9]{1,11}")
TENANT_MIN, TENANT_MAX = -(2**31), 2**31 - 1


def parse_tenant(value: object) -> int:
    """An integer tenant id from an int or a string of ASCII digits (an optional '-'), within
    the 32-bit signed range; BadTenantError otherwise (no '٣', '1_0', ' 7' or 30 digits, which
    int() would take)."""
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, str) and TENANT_RE.fullmatch(value):
        number = int(value)
    else:
        shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:40] + "..."
        raise BadTenantError(f"tenant id must be an integer of ASCII digits, got {shown}")
    if not TENANT_MIN <= number <= TENANT_MAX:
        raise BadTenantError(
            f"tenant id {number} is outside the 32-bit range [{TENANT_MIN}, {TENANT_MAX}]"
        )
    return number


def check_name(name):
    """Plan names become file names and topology names: no whitespace, no path separators."""
    if not isinstance(name, str) or not NAME_RE.match(name) or name in (".", ".."):
        raise StoreError(f"execution plan name {name!r} must match {NAME_RE.pattern}")
    return name


class PlanStore:
    """Stores plan text by (tenant, name). Implementations: FileStore, RedisStore."""

    def save(self, tenant, name, text):
        raise NotImplementedError

    def load(self, tenant, name):
        """The plan's SiddhiQL text; PlanNotFoundError when absent."""
        raise NotImplementedError

    def delete(self, tenant, name):
        """Remove the plan; PlanNotFoundError when absent."""
        raise NotImplementedError

    def names(self, tenant):
        """Sorted plan names of one tenant."""
        raise NotImplementedError

    def tenants(self):
        """Sorted tenant ids that have at least one plan."""
        raise NotImplementedError

    def exists(self, tenant, name):
        try:
            self.load(tenant, name)
            return True
        except PlanNotFoundError:
            return False

    def all(self):
        """Every (tenant, name, text), tenants and names sorted."""
        return [(t, n, self.load(t, n)) for t in self.tenants() for n in self.names(t)]

    def load_versions(self):
        """{"version": n, "plans": {"tenant/name": n}} as last saved (a restarted
        manager keeps the versions, so workers do not tear plans down); {} when none."""
        return {}

    def save_versions(self, versions):
        """Keep the deployment version and each plan's version (see load_versions)."""

    def close(self):
        """Release connections."""


def not_found(tenant, name):
    return PlanNotFoundError(f"no execution plan {name!r} for tenant {tenant}")
