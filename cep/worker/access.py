"""Who may read a worker's status and metrics: they name every tenant's plans, streams, sinks,
counters and endpoints, so with a cluster secret configured (the default on a manager with
authentication) `/status`, `/metrics`, `/metrics.json` and `GET /events` need either the
cluster secret (`X-CEP-Cluster-Secret`, what the manager and the tools present) or an API
token of a super admin (`Authorization: Bearer`, e.g. Prometheus' `bearer_token`), which the
worker checks with a manager (`GET /api/v1/whoami`) and remembers for `ttl` seconds. Without
a secret (a standalone worker, authentication off) they stay open: the worker then binds
loopback by default. `/health` is always open."""

import json
import threading
import time
import urllib.error
import urllib.request

from flask import jsonify, request

from cep.security import cluster_secret

SUPER_ADMIN = "super-admin"


class StatusGuard:
    def __init__(self, secret, managers=None, ttl=60.0, clock=time.monotonic):
        self.secret, self.managers, self.ttl, self.clock = secret, managers, ttl, clock
        self._seen = {}  # token -> (checked at, is a super admin)
        self._lock = threading.Lock()

    def refused(self):
        """None when this request may read; else the 401 reply."""
        if not self.secret:
            return None
        if cluster_secret.check(request.headers.get(cluster_secret.HEADER), self.secret):
            return None
        header = request.headers.get("Authorization", "")
        if header.startswith("Bearer ") and self._super_admin(header[len("Bearer ") :].strip()):
            return None
        resp = jsonify(
            {
                "error": "NotAuthenticatedError",
                "message": "this worker's status and metrics need the cluster secret "
                f"({cluster_secret.HEADER}) or a super admin's API token "
                "(Authorization: Bearer)",
            }
        )
        resp.headers["WWW-Authenticate"] = 'Bearer realm="cep-worker"'
        return resp, 401

    def _super_admin(self, token):
        if not token or len(token) > 200:
            return False
        now = self.clock()
        with self._lock:
            seen = self._seen.get(token)
            if seen is not None and now - seen[0] < self.ttl:
                return seen[1]
        ok = self._ask(token)
        with self._lock:
            if len(self._seen) > 1000:
                self._seen.clear()
            self._seen[token] = (now, ok)
        return ok

    def _ask(self, token):
        """Whether a manager says the token is a super admin's (False when none answers)."""
        if self.managers is None:
            return False
        for url in self.managers.urls:
            req = urllib.request.Request(
                f"{url}/api/v1/whoami",
                headers={"Authorization": f"Bearer {token}", "Accept": "application/json"},
            )
            try:
                with urllib.request.urlopen(req, timeout=self.managers.timeout) as resp:
                    return json.loads(resp.read()).get("role") == SUPER_ADMIN
            except urllib.error.HTTPError as exc:
                if exc.code in (401, 403):
                    return False
            except (OSError, ValueError):
                continue
        return False
