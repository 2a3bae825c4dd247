"""A worker's spout connection leaves a spout whose task restarted with a new socket at once
(issue 11: recovery <= 30 s), even while the old socket still accepts the TCP connection
(a process that hangs instead of dying): the registry replaced the old registration, and the
connection checks its endpoint every reconnect_interval. Real ZeroMQ sockets and registry."""

import time

import zmq

from cep.protocol.frames import decode_batch
from cep.protocol.registry_client import RegistryClient
from cep.worker.inflow import SpoutConnection
from manager.registry.service import RegistryService

TENANT, PLAN, STREAM = -1234, "P", "S"
COMPONENT = "P[-1234]:receiver:0"


def pull(registry):
    sock = zmq.Context.instance().socket(zmq.PULL)
    sock.setsockopt(zmq.LINGER, 0)
    port = sock.bind_to_random_port("tcp://127.0.0.1")
    registry.register(
        "receiver", TENANT, PLAN, "127.0.0.1", port, streams=[STREAM], component=COMPONENT
    )
    return sock, f"tcp://127.0.0.1:{port}"


def drain(sock, into):
    while sock.poll(10):
        into.extend(decode_batch(sock.recv())[1])
    return len(into)


def test_the_connection_moves_to_the_restarted_spout():
    svc = RegistryService(port=0, bind_host="127.0.0.1", liveness=30.0)
    svc.start()
    client = RegistryClient(f"tcp://127.0.0.1:{svc.port}")
    old, old_address = pull(client)
    conn = SpoutConnection(
        client, TENANT, PLAN, STREAM, client="w1", reconnect_interval=0.2, connect_timeout=1.0
    ).start()
    try:
        got_old, got_new = [], []
        conn.offer([(i, ("a", i)) for i in range(10)])
        deadline = time.monotonic() + 5
        while drain(old, got_old) < 10 and time.monotonic() < deadline:
            pass
        assert len(got_old) == 10 and conn.endpoint == old_address
        new, new_address = pull(client)  # the same component restarted; `old` stays open
        replaced = time.monotonic()
        deadline = replaced + 60  # generous: a loaded machine must not fail the test
        while conn.endpoint != new_address or not conn.connected:
            assert time.monotonic() < deadline, conn.metrics()
            time.sleep(0.01)
        print(f"moved after {time.monotonic() - replaced:.2f} s")
        conn.offer([(i, ("b", i)) for i in range(10, 20)])
        deadline = time.monotonic() + 5
        while drain(new, got_new) < 10 and time.monotonic() < deadline:
            pass
        assert [e[0] for e in got_new] == list(range(10, 20))
        assert drain(old, got_old) == 10  # nothing more went to the replaced socket
        assert conn.metrics()["reconnects"] == 1
        assert "replaced" in conn.metrics()["last_error"]
        new.close(0)
    finally:
        conn.stop(drain_timeout=0)
        old.close(0)
        client.close()
        svc.stop()
