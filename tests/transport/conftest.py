"""A real nats-server with JetStream for the NATS transport tests (tests/connectors/servers.py)."""

import pytest

from tests.connectors.servers import start_nats


@pytest.fixture(scope="module")
def nats_server(tmp_path_factory):
    server = start_nats(tmp_path_factory.mktemp("nats"))
    yield server
    server.stop()
