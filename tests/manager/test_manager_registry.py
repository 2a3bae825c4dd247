"""Endpoint registry: selection rules on the table, and the real ZeroMQ service and client."""

import logging

import msgpack
import pytest
import zmq

from manager.exceptions import RegistryError
from cep.protocol.registry_client import Heartbeat, RegistryClient
from cep.protocol.identity import machine_identity
from manager.registry.service import RegistryService
from manager.registry.table import EndpointTable
from cep.protocol.frames import BadFrameError, decode_batch, encode_batch

T, P = -1234, "StockAnalysis"


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


@pytest.fixture
def table():
    clock = Clock()
    t = EndpointTable(liveness=30.0, clock=clock)
    t.fake_clock = clock
    return t


def test_locality_prefers_requesters_machine(table):
    table.register("receiver", T, P, "10.0.0.1", 5001, ["10.0.0.1"], ["S"])
    table.register("receiver", T, P, "10.0.0.2", 5002, ["10.0.0.2", "172.17.0.1"], ["S"])
    ep, local, _ = table.lookup("receiver", T, P, "S", machine=["172.17.0.1", "192.168.9.9"])
    assert (ep.port, local) == (5002, True)
    # an open connection on the local endpoint does not move the requester off its machine
    table.connect("receiver", T, P, ep.address, "w1", "S")
    ep2, local2, count = table.lookup("receiver", T, P, "S", machine=["172.17.0.1"])
    assert (ep2.port, local2, count) == (5002, True, 1)


def test_fewest_open_connections_and_release(table):
    a = table.register("publisher", T, P, "10.0.0.1", 6001, worker="w1")
    b = table.register("publisher", T, P, "10.0.0.2", 6002, worker="w2")
    c1 = table.connect("publisher", T, P, a, "bolt:0")
    assert table.lookup("publisher", T, P)[0].address == b
    c2 = table.connect("publisher", T, P, b, "bolt:1")
    table.connect("publisher", T, P, b, "bolt:2")
    assert table.lookup("publisher", T, P)[0].address == a
    table.release(c1)
    table.release(c2)
    # a: 0 open, b: 1 open -> a, now from released counts (CEP 4.0 never decremented)
    assert table.lookup("publisher", T, P)[0].address == a
    with pytest.raises(RegistryError) as err:
        table.release(c1)
    assert err.value.name == "UnknownConnection"


def test_stale_endpoints_skipped_with_warning_then_removed(table, caplog):
    table.register("receiver", T, P, "10.0.0.1", 5001, [], ["S"])
    table.fake_clock.now += 20
    table.register("receiver", T, P, "10.0.0.2", 5002, [], ["S"])
    table.fake_clock.now += 15  # first is 35 s old, second 15 s
    with caplog.at_level(logging.WARNING, logger="manager.registry"):
        ep, _, _ = table.lookup("receiver", T, P, "S", machine=["10.0.0.1"])
    assert ep.port == 5002
    assert "no heartbeat for 35.0 s" in caplog.text
    table.fake_clock.now += 30  # first is 65 s old: removed with its connections
    table.register("receiver", T, P, "10.0.0.2", 5002, [], ["S"])  # heartbeat
    table.lookup("receiver", T, P, "S")
    assert [k[3] for k in table.endpoints] == ["tcp://10.0.0.2:5002"]
    table.fake_clock.now += 31
    with pytest.raises(RegistryError) as err:
        table.lookup("receiver", T, P, "S")
    assert err.value.name == "EndpointNotFound"


def test_receiver_lookup_filters_by_stream_and_plan_removal(table):
    table.register("receiver", T, P, "h", 1, [], ["A"])
    table.register("receiver", T, P, "h", 2, [], ["B"])
    table.register("receiver", 7, P, "h", 3, [], ["A"])
    assert table.lookup("receiver", T, P, "B")[0].port == 2
    assert table.lookup("receiver", 7, P, "A")[0].port == 3
    table.connect("receiver", T, P, "tcp://h:1", "w1", "A")
    assert table.remove_plan(T, P) == 2
    assert table.connections == {}
    assert table.lookup("receiver", 7, P, "A")[0].port == 3


def test_machine_identity_has_no_loopback():
    ident = machine_identity("node-7.example")
    assert "node-7.example" in ident
    assert not any(a.startswith("127.") or a == "::1" for a in ident)


def test_batch_frame_roundtrip_and_rejects():
    frame = encode_batch("S", [[1, ["a", 1.5, None, True]], [2, ["b", 2.0, 3, False]]])
    assert decode_batch(frame) == ("S", [[1, ["a", 1.5, None, True]], [2, ["b", 2.0, 3, False]]])
    for bad in (b"\xc1garbage", msgpack.packb({"x": 1}), msgpack.packb([2, "S", []])):
        with pytest.raises(BadFrameError):
            decode_batch(bad)


# --- the real ZeroMQ service ---


@pytest.fixture
def service():
    known = {(T, P), (5, P)}
    svc = RegistryService(
        port=0, bind_host="127.0.0.1", liveness=30.0, plan_exists=lambda t, p: (t, p) in known
    )
    svc.start()
    yield svc
    svc.stop()


@pytest.fixture
def client(service):
    c = RegistryClient(f"tcp://127.0.0.1:{service.port}", timeout=2.0)
    yield c
    c.close()


def test_register_lookup_connect_release_over_zeromq(client):
    client.register("receiver", T, P, "10.1.0.1", 40001, ["10.1.0.1"], ["S"], component="spout:0")
    client.register("receiver", T, P, "10.1.0.2", 40002, ["10.1.0.2"], ["S"], component="spout:1")
    rep = client.lookup("receiver", T, P, stream="S", machine=["10.1.0.2"])
    assert (rep["endpoint"], rep["local"]) == ("tcp://10.1.0.2:40002", True)
    cid = client.connect("receiver", T, P, rep["endpoint"], client="w1", stream="S")
    far = client.lookup("receiver", T, P, stream="S", machine=["10.9.9.9"])
    assert far["endpoint"] == "tcp://10.1.0.1:40001"  # fewest open connections
    status = client.status(T, P)
    assert [c["client"] for c in status["connections"]] == ["w1"]
    assert client.release(cid)["released"] == 1
    assert client.status(T, P)["connections"] == []
    # the same plan name under another tenant is another key
    with pytest.raises(RegistryError) as err:
        client.lookup("receiver", 5, P, stream="S")
    assert err.value.name == "EndpointNotFound"


@pytest.mark.parametrize(
    "body,error",
    [
        (b"\xc1 not msgpack", "BadRequest"),
        (msgpack.packb([1, 2, 3]), "BadRequest"),
        (msgpack.packb({"op": "fly"}), "UnknownOp"),
        (
            msgpack.packb({"op": "register", "kind": "receiver", "tenant": "x", "plan": P}),
            "BadRequest",
        ),
        (msgpack.packb({"op": "register", "kind": "spout", "tenant": T, "plan": P}), "BadRequest"),
        (
            msgpack.packb(
                {
                    "op": "register",
                    "kind": "publisher",
                    "tenant": T,
                    "plan": P,
                    "host": "h",
                    "port": 1,
                }
            ),
            "BadRequest",
        ),  # publisher needs a worker id
        (
            msgpack.packb(
                {
                    "op": "register",
                    "kind": "receiver",
                    "tenant": 99,
                    "plan": P,
                    "host": "h",
                    "port": 1,
                }
            ),
            "UnknownPlan",
        ),
        (msgpack.packb({"op": "release", "connection": "c999"}), "UnknownConnection"),
        (msgpack.packb({"op": "lookup", "kind": "receiver", "tenant": T, "plan": P}), "BadRequest"),
    ],
)
def test_malformed_requests_get_error_replies_and_service_survives(service, body, error):
    ctx = zmq.Context.instance()
    sock = ctx.socket(zmq.REQ)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(f"tcp://127.0.0.1:{service.port}")
    try:
        sock.send(body)
        assert sock.poll(2000), "no reply to a malformed request"
        reply = msgpack.unpackb(sock.recv(), raw=False)
        assert reply["ok"] is False and reply["error"] == error and reply["message"]
        sock.send(msgpack.packb({"op": "ping", "id": 7}))
        assert sock.poll(2000)
        pong = msgpack.unpackb(sock.recv(), raw=False)
        assert pong["ok"] is True and pong["id"] == 7
    finally:
        sock.close(0)


def test_raw_dealer_garbage_does_not_kill_service(service, client):
    ctx = zmq.Context.instance()
    dealer = ctx.socket(zmq.DEALER)
    dealer.setsockopt(zmq.LINGER, 0)
    dealer.connect(f"tcp://127.0.0.1:{service.port}")
    dealer.send_multipart([b"", b"junk", b"more junk"])
    dealer.send(b"")  # no delimiter, empty body
    assert dealer.poll(2000)
    dealer.close(0)
    assert client.request("ping")["ok"] is True


def test_heartbeat_thread_keeps_endpoint_live_and_unregisters(service, client):
    hb = Heartbeat(
        client,
        interval=0.05,
        kind="publisher",
        tenant=T,
        plan=P,
        host="10.2.0.1",
        port=41000,
        machine=["10.2.0.1"],
        worker="w9",
    ).start()
    try:
        import time

        deadline = time.time() + 3
        while hb.beats < 3 and time.time() < deadline:
            time.sleep(0.02)
        assert hb.beats >= 3
        assert client.lookup("publisher", T, P)["worker"] == "w9"
    finally:
        hb.stop()
    with pytest.raises(RegistryError):
        client.lookup("publisher", T, P)
