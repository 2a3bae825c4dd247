"""Session-wide real brokers for the connector tests (tests/connectors/servers.py)."""

import pytest

from tests.connectors.servers import start_activemq, start_mosquitto, start_nats


@pytest.fixture(scope="session")
def nats_server(tmp_path_factory):
    server = start_nats(tmp_path_factory.mktemp("nats"))
    yield server
    server.stop()


@pytest.fixture(scope="session")
def mosquitto(tmp_path_factory):
    server = start_mosquitto(str(tmp_path_factory.mktemp("mosquitto")))
    yield server
    server.stop()


@pytest.fixture(scope="session")
def activemq(tmp_path_factory):
    server = start_activemq(str(tmp_path_factory.mktemp("activemq")))
    yield server
    server.stop()


# -- a router of one stream (id long, price double) that records what it takes -------------
import threading  # noqa: E402

from cep.model import Attribute, AttrType, StreamDefinition  # noqa: E402
from receivers.router import IngestRouter  # noqa: E402

KEY = ("-1234", "Brokers", "Ticks")


class Taken:
    """A deliver() that keeps every event it takes; refuses everything while `full`."""

    def __init__(self):
        self.events, self.full, self.lock = [], False, threading.Lock()

    def __call__(self, events, wait=0.0):
        if self.full:
            return len(events)
        with self.lock:
            self.events.extend(events)
        return 0

    def ids(self):
        with self.lock:
            return [row[0] for _, row in self.events]


@pytest.fixture
def taken():
    return Taken()


@pytest.fixture
def router(taken):
    r = IngestRouter()
    r.register(
        KEY,
        StreamDefinition(
            "Ticks", (Attribute("id", AttrType.LONG), Attribute("price", AttrType.DOUBLE))
        ),
        taken,
    )
    return r


def wait_for(cond, timeout=30.0):
    import time

    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.02)
    return cond()


@pytest.fixture(scope="module")
def kafka_mock():
    """librdkafka's built-in mock cluster (test.mock.num.brokers), not a Kafka broker: it
    lives inside this client and listens on a loopback port; its bootstrap URL is returned."""
    from confluent_kafka import Producer

    owner = Producer({"test.mock.num.brokers": 1, "log_level": 3})
    brokers = owner.list_topics(timeout=10).brokers.values()
    yield "kafka://" + ",".join(f"{b.host}:{b.port}" for b in brokers)
    owner.flush(5)
    del owner
