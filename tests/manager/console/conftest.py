"""Fixtures of the console view tests: a real manager (store, compiler, registry) with a fake
Spark launcher, its Flask app and test client."""

import pytest

from manager.server import Manager
from manager.settings import load_manager_settings
from manager.web import create_app
from tests.auth_helpers import authorize
from tests.manager.manager_fakes import FakeLauncher


@pytest.fixture
def manager(tmp_path):
    settings = load_manager_settings(
        overrides={
            "manager.data_dir": str(tmp_path),
            "registry.port": 0,
            "registry.bind_host": "127.0.0.1",
            "manager.advertised_host": "127.0.0.1",
        },
        env={},
    )
    m = Manager(settings, launcher=FakeLauncher()).start()
    yield m
    m.stop()


@pytest.fixture
def app(manager):
    return create_app({"MANAGER": manager, "TESTING": True})


@pytest.fixture
def client(app, manager):
    client = app.test_client()
    authorize(client, manager)  # issue 10: the super admin's token on every request
    return client
