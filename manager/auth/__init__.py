"""Users, roles, tenants, API tokens, console sessions, CSRF and the audit log of the manager.

`AuthService` (service.py) ties them to the manager's store and data dir; the web side
(manager/web/auth_guard.py) asks it who a request comes from and what that principal may do."""

from manager.auth.roles import Principal, ROLES, SUPER_ADMIN, TENANT_ADMIN, VIEWER, WORKER
from manager.auth.service import AuthService

__all__ = ["AuthService", "Principal", "ROLES", "SUPER_ADMIN", "TENANT_ADMIN", "VIEWER", "WORKER"]
