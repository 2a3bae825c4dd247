"""AuthService: the manager's users, tenants, tokens, cluster secret, app secret key and audit
log, built from its settings and data dir (records in Redis when the plan store is Redis)."""

import logging
import os
import secrets
import sys

from cep.security import cluster_secret
from manager.auth import sessions
from manager.auth.audit import AuditLog
from manager.auth.exceptions import ThrottledError
from manager.auth.throttle import LoginThrottle
from manager.auth.roles import SUPER_ADMIN, WORKER, Principal
from manager.auth.tokens import Tokens
from manager.auth.users import Directory
from manager.store.base import SUPER_TENANT
from manager.store.records import open_records

log = logging.getLogger("manager.auth")
ADMIN = "admin"


class AuthService:
    """Who may do what on this manager. `enabled` is `security.auth`."""

    def __init__(self, settings, data_dir, env=None):
        self.settings, self.data_dir = settings, data_dir
        self.env = os.environ if env is None else env
        self.enabled = bool(settings["security.auth"])
        self.idle_secs = float(settings["security.session_idle_secs"])
        self.records = open_records(
            data_dir, settings["store.redis_url"] or None, settings["store.redis_prefix"]
        )
        self.directory = Directory(self.records)
        self.tokens = Tokens(self.records)
        self.audit = AuditLog(data_dir)
        self.throttle = LoginThrottle()
        self.cluster_secret = self._cluster_secret()
        self.secret_key = sessions.secret_key(data_dir)

    def _cluster_secret(self):
        path = self.settings["security.cluster_secret_file"]
        if path:
            return cluster_secret.read(path)
        return cluster_secret.read(self.env) or cluster_secret.load_or_create(self.data_dir)

    def bootstrap(self, announce=None):
        """First start: the super tenant and the super admin `admin` (password from
        $CEP_ADMIN_PASSWORD, else `security.admin_password_file`, else generated and printed
        once on stderr, never to the log)."""
        self.directory.ensure_super_tenant()
        if self.records.get("users", ADMIN) is not None:
            return None
        password, source = self._first_password()
        self.directory.add_user(ADMIN, password, SUPER_TENANT, SUPER_ADMIN)
        self.audit.record("user.add", user="(first start)", tenant=SUPER_TENANT, target=ADMIN)
        if source == "generated":
            (announce or _stderr)(
                f"CEP manager first start: user '{ADMIN}' created with "
                f"password {password} (shown once; change it or set "
                f"CEP_ADMIN_PASSWORD before the first start)"
            )
        log.info("first start: super admin %r created (password from %s)", ADMIN, source)
        return source

    def _first_password(self):
        if self.env.get("CEP_ADMIN_PASSWORD"):
            return self.env["CEP_ADMIN_PASSWORD"], "CEP_ADMIN_PASSWORD"
        path = self.settings["security.admin_password_file"]
        if path:
            with open(path, encoding="utf-8") as fh:
                return fh.read().strip(), "security.admin_password_file"
        return secrets.token_urlsafe(12), "generated"

    def principal(self, user):
        """The Principal of a user name, or None when the user no longer exists."""
        record = self.records.get("users", user) if isinstance(user, str) else None
        if record is None:
            return None
        return record

    def from_token(self, token):
        """(Principal or None) for a bearer value: the cluster secret or a user's API token."""
        if cluster_secret.check(token, self.cluster_secret):
            return Principal("worker", SUPER_TENANT, WORKER, "cluster-secret")
        user = self.tokens.resolve(token)
        record = self.principal(user) if user else None
        return _principal(record, "token") if record else None

    def from_session(self, user, epoch=0):
        """The Principal of a console session, None once its user logged out since (epoch)."""
        record = self.principal(user)
        if record is None or record.get("epoch", 0) != epoch:
            return None
        return _principal(record, "session")

    def end_sessions(self, user):
        """Revoke every console session of `user` (logout, new password)."""
        record = self.principal(user)
        if record is not None:
            record["epoch"] = record.get("epoch", 0) + 1
            self.records.put("users", user, record)

    def login(self, name, password, remote=None):
        """The user record if the password is right (audited either way), else None;
        ThrottledError (with `retry_after`) when this address failed too often lately
        (manager/auth/throttle.py: an address that has not failed is never refused)."""
        shown = name if isinstance(name, str) and len(name) <= 64 else "(invalid)"
        wait, locked = self.throttle.retry_after(shown, remote)
        if wait > 0:
            if locked:  # every lock is audited once, when it starts
                self.audit.record("login.lock", "locked", user=shown, remote=remote)
            self.audit.record("login", "throttled", user=shown, remote=remote)
            raise ThrottledError(
                f"too many failed logins from this address; try again in {int(wait) + 1} s",
                retry_after=int(wait) + 1,
            )
        record = self.directory.authenticate(name, password)
        (self.throttle.succeeded if record else self.throttle.failed)(shown, remote)
        self.audit.record(
            "login",
            "ok" if record else "failed",
            user=shown,
            tenant=record["tenant"] if record else None,
            remote=remote,
        )
        return record

    def create_token(self, user, label=""):
        """A new API token of `user` (text, record); the caller shows the text once."""
        self.directory.user(user)
        return self.tokens.create(user, label)

    def close(self):
        self.records.close()


def _principal(record, via):
    return Principal(record["name"], record["tenant"], record["role"], via)


def _stderr(message):
    print(message, file=sys.stderr, flush=True)
