"""Roles and what each may do.

- super-admin: creates tenants and users, acts in any tenant;
- tenant-admin: reads and changes the plans of its own tenant;
- viewer: reads its own tenant;
- worker: a CEP worker holding the cluster secret: plan sync and the manager's address only."""

from dataclasses import dataclass

SUPER_ADMIN, TENANT_ADMIN, VIEWER, WORKER = "super-admin", "tenant-admin", "viewer", "worker"
ROLES = (SUPER_ADMIN, TENANT_ADMIN, VIEWER)  # roles a user may have


@dataclass(frozen=True)
class Principal:
    """Who a request comes from: a user (by token or session) or a worker (cluster secret)."""

    name: str
    tenant: int
    role: str
    via: str  # "token", "session", "cluster-secret" or "insecure"

    @property
    def is_super(self):
        return self.role == SUPER_ADMIN

    def sees(self, tenant):
        """May this principal see anything of `tenant`?"""
        return self.is_super or (self.role in (TENANT_ADMIN, VIEWER) and tenant == self.tenant)

    def may_write(self, tenant):
        """May this principal change plans of `tenant`?"""
        return self.is_super or (self.role == TENANT_ADMIN and tenant == self.tenant)

    def to_dict(self):
        return {"user": self.name, "tenant": self.tenant, "role": self.role}
