"""Worker test fixtures: a real registry service, a stand-in manager REST endpoint serving
/api/v1/deployments (PROTOCOL.md section 3), stand-in spouts and bolts on real sockets."""

import os
import time

import pytest
import zmq
from flask import Flask, jsonify, request

from cep.protocol.registry_client import RegistryClient
from cep.security import curve
from manager.registry.service import RegistryService
from cep.protocol.frames import decode_batch, encode_batch
from receivers.http_receiver import HttpServer
from publishers.service import numbered

TENANT = -1234


def wait_for(cond, timeout=8.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end and not cond():
        time.sleep(0.02)
    return cond()


def stock_entry(version=1, sinks=None, name="StockAnalysis"):
    """One plans[] entry as the manager serves it."""
    return {
        "tenant": TENANT,
        "name": name,
        "topology": f"{name}[{TENANT}]",
        "version": version,
        "receiverParallelism": 1,
        "publisherParallelism": 1,
        # the manager's authentication is on in these tests: bolts present the plan's token
        "publisherAuth": "token",
        "imported": [
            {
                "stream": "StockStream",
                "cepStream": "StockStream:1.0.0",
                "definition": "define stream StockStream (symbol string, price double, "
                "volume long);",
                "attributes": [["symbol", "string"], ["price", "double"], ["volume", "long"]],
                "sources": [],
                "annotations": [],
            }
        ],
        "exported": [
            {
                "stream": "HighPriceStream",
                "cepStream": "HighPriceStream:1.0.0",
                "definition": "",
                "attributes": [["symbol", "string"], ["price", "double"], ["volume", "long"]],
                "sinks": sinks or [],
                "annotations": [],
            }
        ],
    }


class FakeManagerRest:
    """Serves GET /api/v1/deployments with ETag/304 from a mutable plan list."""

    def __init__(self):
        self.plans, self.version, self.requests = [], 1, 0
        self.answer = None  # an HTTP status every request gets instead (a manager that is away)
        app = Flask("fake-manager")

        @app.get("/api/v1/deployments")
        def deployments():
            self.requests += 1
            if self.answer:
                return "", self.answer
            etag = f'"{self.version}"'
            if request.headers.get("If-None-Match") == etag:
                return "", 304
            resp = jsonify({"version": self.version, "plans": self.plans})
            resp.headers["ETag"] = etag
            return resp

        self.server = HttpServer(app, "127.0.0.1", 0).start()
        self.url = self.server.url

    def set_plans(self, plans):
        self.plans = plans
        self.version += 1


class FakeSpout:
    """A PULL socket registered as a receiver spout task (what receivers/spout.py does)."""

    def __init__(self, registry, plan="StockAnalysis", streams=("StockStream",)):
        self.sock = zmq.Context.instance().socket(zmq.PULL)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.port = self.sock.bind_to_random_port("tcp://127.0.0.1")
        self.registry, self.plan = registry, plan
        registry.register("receiver", TENANT, plan, "127.0.0.1", self.port, streams=list(streams))
        self.events = []

    def drain(self):
        while self.sock.poll(10):
            _, events = decode_batch(self.sock.recv())
            self.events.extend(events)
        return len(self.events)

    def close(self):
        self.registry.unregister("receiver", TENANT, self.plan, f"tcp://127.0.0.1:{self.port}")
        self.sock.close(0)


class FakePublisherBolt:
    """A DEALER socket to the CEP publisher the registry picks (what publishers/bolt.py does):
    with the cluster secret (the tests' workers have it) it presents the plan's token."""

    def __init__(self, registry, plan="StockAnalysis"):
        ep = registry.lookup("publisher", TENANT, plan)["endpoint"]
        self.sock = zmq.Context.instance().socket(zmq.DEALER)
        self.sock.setsockopt(zmq.LINGER, 2000)
        self.number = 0
        secret = os.environ.get("CEP_CLUSTER_SECRET")
        if secret:
            curve.plain_client(self.sock, curve.plan_token(secret, TENANT, plan))
        self.sock.connect(ep)
        self.conn = registry.connect("publisher", TENANT, plan, ep, client="bolt:0")
        self.registry = registry

    def send(self, stream, events):
        self.number += 1
        self.sock.send_multipart(numbered(self.number, encode_batch(stream, events)))

    def close(self):
        self.registry.release(self.conn)
        self.sock.close()


@pytest.fixture
def registry_service():
    svc = RegistryService(port=0, bind_host="127.0.0.1")
    svc.start()
    yield svc
    svc.stop()


@pytest.fixture
def registry_client(registry_service):
    c = RegistryClient(f"tcp://127.0.0.1:{registry_service.port}")
    yield c
    c.close()


@pytest.fixture
def fake_manager():
    m = FakeManagerRest()
    yield m
    m.server.stop()


@pytest.fixture
def helpers():
    return {
        "wait_for": wait_for,
        "stock_entry": stock_entry,
        "FakeSpout": FakeSpout,
        "FakePublisherBolt": FakePublisherBolt,
        "TENANT": TENANT,
    }
