"""A worker's publisher port without CURVE: only the publisher bolts of its own plan may push
results into it (PLAIN with the plan's token, derived from the cluster secret). Real ZeroMQ
sockets, a real registry, the real publisher bolt and service."""

import json
import time

import pytest
import zmq

from cep.protocol.frames import encode_output
from cep.security import curve
from manager.registry.client import RegistryClient
from manager.registry.service import RegistryService
from publishers.bolt import PublisherBolt
from publishers.service import PublisherService, numbered
from publishers.sink_set import SinkSet
from topology.component import Batch, Collector, Context

T, P, S = -1234, "Guarded", "Out"
SECRET = "a-cluster-secret-for-tests"


@pytest.fixture
def worker(tmp_path):
    reg = RegistryService(
        port=0, bind_host="127.0.0.1", liveness=600, security=curve.LinkSecurity(None, SECRET)
    )
    reg.start()
    specs = {S: [{"type": "file", "options": {"path": str(tmp_path / "out.jsonl")}}]}
    svc = PublisherService(
        SinkSet.from_specs(specs, "w1"),
        "127.0.0.1",
        token=curve.plan_token(SECRET, T, P),
        domain=f"{T}/{P}",
    ).start()
    client = RegistryClient(
        f"tcp://127.0.0.1:{reg.port}", security=curve.LinkSecurity(None, SECRET)
    )
    client.register("publisher", T, P, "127.0.0.1", svc.port, worker="w1")
    yield f"tcp://127.0.0.1:{reg.port}", svc, tmp_path / "out.jsonl"
    svc.stop()
    client.close()
    reg.stop()


def rows(path):
    return (
        [json.loads(line)["data"][0] for line in path.read_text().splitlines()]
        if path.exists()
        else []
    )


def push(port, frame, password=None):
    sock = zmq.Context.instance().socket(zmq.DEALER)  # as a publisher bolt
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.SNDTIMEO, 2000)
    if password:
        curve.plain_client(sock, password)
    sock.connect(f"tcp://127.0.0.1:{port}")
    try:
        sock.send_multipart(numbered(1, frame))
    except zmq.Again:
        pass
    time.sleep(0.5)
    sock.close(0)


def test_only_the_plans_own_bolts_reach_its_publisher_port(worker):
    url, svc, out = worker
    forged = encode_output(S, [(1, ["FORGED"])], "x:y:0", -1, 0)
    push(svc.port, forged)  # no credentials
    push(svc.port, forged, curve.plan_token(SECRET, T, "OtherPlan"))  # another plan's token
    push(svc.port, forged, curve.plan_token("wrong-secret", T, P))  # a guessed secret
    bolt = PublisherBolt(
        {
            "registry": url,
            "tenant": T,
            "plan": P,
            "streams": {S: ["v"]},
            "host": "127.0.0.1",
            "retry_interval": 0.05,
            "connect_timeout": 2.0,
        }
    )
    bolt.prepare(
        Context(f"{P}[{T}]", "out", 0, 1, 0, {}, security=curve.LinkSecurity(None, SECRET)),
        Collector("out", {}),
    )
    assert bolt.token == curve.plan_token(SECRET, T, P)
    bolt.execute(Batch([(1000, "real")], S))
    deadline = time.monotonic() + 10
    while rows(out) != ["real"] and time.monotonic() < deadline:
        time.sleep(0.05)
    bolt.cleanup()
    assert rows(out) == ["real"]  # the bolt's row only: no forged frame was taken
    assert svc.metrics()["frames"] == 1
