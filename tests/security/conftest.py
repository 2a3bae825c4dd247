"""Fixtures of the security tests: a manager with a real compiler, store and registry and a
fake launcher, its REST client, and the folders a plan may and may not touch."""

import pytest

from cep.model import Attribute, AttrType, StreamDefinition
from manager.server import Manager
from manager.settings import load_manager_settings
from manager.web import create_app
from receivers.router import IngestRouter
from tests.auth_helpers import authorize
from tests.manager.manager_fakes import FakeLauncher


@pytest.fixture
def roots(tmp_path):
    """(allowed root of tenant -1234, a folder outside every root with a secret in it)."""
    allowed = tmp_path / "data" / "tenants" / "-1234" / "files"
    allowed.mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("do not read\n")
    return allowed, outside


@pytest.fixture
def manager(tmp_path, roots):
    settings = load_manager_settings(
        overrides={
            "manager.data_dir": str(tmp_path / "data"),
            "registry.port": 0,
            "registry.bind_host": "127.0.0.1",
            "manager.advertised_host": "127.0.0.1",
            "sinks.http_allow": ["203.0.113.0/24"],
            "sinks.redis_connections": ["main=redis://127.0.0.1:1/0"],
            "limits.queries": 20,
            "limits.window_length": 10_000,
            "limits.window_secs": 3600,
            "limits.table_rows": 50,
        },
        env={},
    )
    m = Manager(settings, launcher=FakeLauncher()).start()
    yield m
    m.stop()


@pytest.fixture
def client(manager):
    client = create_app({"MANAGER": manager}).test_client()
    authorize(client, manager)  # issue 10: the super admin's token on every request
    return client


STOCK = StreamDefinition(
    "StockStream",
    (
        Attribute("symbol", AttrType.STRING),
        Attribute("price", AttrType.DOUBLE),
        Attribute("volume", AttrType.LONG),
        Attribute("qty", AttrType.INT),
        Attribute("ok", AttrType.BOOL),
    ),
)


class Recorder:
    """A deliver() that keeps every batch."""

    def __init__(self):
        self.events = []

    def __call__(self, events, wait=0.0):
        self.events.extend(events)
        return 0


@pytest.fixture
def recorder():
    return Recorder()


@pytest.fixture
def router(recorder):
    """An IngestRouter serving tenant 1's StockAnalysis/StockStream."""
    r = IngestRouter()
    r.register(("1", "StockAnalysis", "StockStream"), STOCK, recorder)
    return r
