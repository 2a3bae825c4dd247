"""Users and tenants in the manager's record store. Passwords are hashed with werkzeug's
scrypt and never kept, logged or returned."""

import re
import time

from werkzeug.security import check_password_hash, generate_password_hash

from manager.auth.exceptions import BadUserError, UnknownUserError, UserExistsError
from manager.auth.roles import ROLES, SUPER_ADMIN
from manager.store.base import SUPER_TENANT, parse_tenant

USER_RE = re.compile(r"^[A-Za-z0-9_.@\-]{1,64}$")
MIN_PASSWORD = 8
# checked against when a user is unknown, so a login takes as long either way
_DUMMY_HASH = generate_password_hash("not-a-user-password", method="scrypt")


def hash_password(password):
    return generate_password_hash(password, method="scrypt")


def public(record):
    """A user record without its password hash."""
    return {k: v for k, v in record.items() if k != "password"}


class Directory:
    """Users (`users` records keyed by name) and tenants (`tenants` records keyed by id)."""

    def __init__(self, records):
        self.records = records

    # tenants
    def ensure_super_tenant(self):
        if self.records.get("tenants", str(SUPER_TENANT)) is None:
            self.records.put("tenants", str(SUPER_TENANT), _tenant(SUPER_TENANT, "super tenant"))

    def add_tenant(self, tenant, name=""):
        tenant = parse_tenant(tenant)
        if not isinstance(name, str) or len(name) > 100:
            raise BadUserError("a tenant name must be text of at most 100 characters")
        if self.records.get("tenants", str(tenant)) is not None:
            raise UserExistsError(f"tenant {tenant} already exists")
        record = _tenant(tenant, name)
        self.records.put("tenants", str(tenant), record)
        return record

    def tenants(self):
        return sorted(self.records.all("tenants").values(), key=lambda t: t["id"])

    def tenant_exists(self, tenant):
        return self.records.get("tenants", str(tenant)) is not None

    # users
    def add_user(self, name, password, tenant=SUPER_TENANT, role="viewer"):
        check_user_name(name)
        tenant = parse_tenant(tenant)
        if role not in ROLES:
            raise BadUserError(f"role must be one of {', '.join(ROLES)}, got {str(role)[:40]!r}")
        if role == SUPER_ADMIN and tenant != SUPER_TENANT:
            raise BadUserError(f"a {SUPER_ADMIN} belongs to the super tenant {SUPER_TENANT}")
        check_password(password)
        if not self.tenant_exists(tenant):
            raise BadUserError(f"tenant {tenant} does not exist (create it first)")
        if self.records.get("users", name) is not None:
            raise UserExistsError(f"user {name!r} already exists")
        record = {
            "name": name,
            "tenant": tenant,
            "role": role,
            "password": hash_password(password),
            "created": _now(),
        }
        self.records.put("users", name, record)
        return public(record)

    def user(self, name):
        record = self.records.get("users", name) if isinstance(name, str) else None
        if record is None:
            raise UnknownUserError(f"no user {str(name)[:64]!r}")
        return record

    def users(self, tenant=None):
        out = [public(r) for r in self.records.all("users").values()]
        if tenant is not None:
            out = [u for u in out if u["tenant"] == tenant]
        return sorted(out, key=lambda u: u["name"])

    def remove_user(self, name):
        if not self.records.delete("users", name):
            raise UnknownUserError(f"no user {str(name)[:64]!r}")

    def set_password(self, name, password):
        record = self.user(name)
        check_password(password)
        record["password"] = hash_password(password)
        self.records.put("users", name, record)

    def authenticate(self, name, password):
        """The user's record if the password matches, else None (same work either way)."""
        record = self.records.get("users", name) if isinstance(name, str) else None
        if not isinstance(password, str):
            return None
        ok = check_password_hash(record["password"] if record else _DUMMY_HASH, password)
        return record if ok and record else None


def check_user_name(name):
    if not isinstance(name, str) or not USER_RE.match(name):
        raise BadUserError(f"a user name must match {USER_RE.pattern}")


def check_password(password):
    if not isinstance(password, str) or len(password) < MIN_PASSWORD or len(password) > 1024:
        raise BadUserError(f"a password must be text of {MIN_PASSWORD} to 1024 characters")


def _tenant(tenant, name):
    return {"id": tenant, "name": name, "created": _now()}


def _now():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
