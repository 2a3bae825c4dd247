"""Users of the auth tests: a super admin, a tenant admin and a viewer of tenant 5, and a
tenant admin of tenant 6, each with a Flask test client carrying its token."""

import types

import pytest

from manager.web import create_app
from tests.auth_helpers import authorize

USERS = {"admin5": (5, "tenant-admin"), "viewer5": (5, "viewer"), "admin6": (6, "tenant-admin")}
PASSWORD = "correct horse battery"


@pytest.fixture
def app(manager):
    return create_app({"MANAGER": manager})


@pytest.fixture
def people(app, manager):
    """{name: test client with that user's token}, plus `anon` (no credentials)."""
    for tenant in (5, 6):
        manager.auth.directory.add_tenant(tenant, f"tenant {tenant}")
    for name, (tenant, role) in USERS.items():
        manager.auth.directory.add_user(name, PASSWORD, tenant, role)
    clients = {"anon": app.test_client()}
    for name in ["admin", *USERS]:
        clients[name] = app.test_client()
        authorize(clients[name], manager, name)
    return types.SimpleNamespace(**clients)
