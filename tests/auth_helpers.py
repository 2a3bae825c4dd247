"""Credentials for tests of a manager with authentication on (issue 10): an admin API token
for a Flask test client, a real-process manager's token, and the shared cluster secret."""

import os

ADMIN_PASSWORD = "test-admin-password"  # set as CEP_ADMIN_PASSWORD by tests/conftest.py


def authorize(client, manager, user="admin"):
    """Make every request of the Flask test `client` carry a new API token of `user`."""
    token, _ = manager.auth.create_token(user, "tests")
    client.environ_base["HTTP_AUTHORIZATION"] = f"Bearer {token}"
    return token


def admin_token(manager):
    """A new API token of the super admin of an in-process manager."""
    return manager.auth.create_token("admin", "tests")[0]


def bearer(token):
    return {"Authorization": f"Bearer {token}"}


def cluster_secret():
    return os.environ["CEP_CLUSTER_SECRET"]


def worker_open(url, timeout=5):
    """urlopen a worker's guarded endpoint (/status, /metrics) with the cluster secret, as
    the manager and the tools do (cep/worker/access.py)."""
    import urllib.request

    secret = os.environ.get("CEP_CLUSTER_SECRET")
    headers = {"X-CEP-Cluster-Secret": secret} if secret else {}
    return urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=timeout)
