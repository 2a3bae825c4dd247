"""The plan store interface and tenant/name checks shared by its implementations."""
import re

from manager.exceptions import BadTenantError, PlanNotFoundError, StoreError

SUPER_TENANT = -1234
NAME_RE = re.compile(r"^[A-Za-z0-9_.\-]+$")


def parse_tenant(value):
    """An integer tenant id from an int or a string; BadTenantError otherwise."""
    if isinstance(value, bool):
        raise BadTenantError(f"tenant id must be an integer, got {value!r}")
    try:
        return int(value)
    except (TypeError, ValueError):
        raise BadTenantError(f"tenant id must be an integer, got {value!r}") from None


def check_name(name):
    """Plan names become file names and topology names: no whitespace, no path separators."""
    if not isinstance(name, str) or not NAME_RE.match(name):
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

    def close(self):
        """Release connections."""


def not_found(tenant, name):
    return PlanNotFoundError(f"no execution plan {name!r} for tenant {tenant}")
