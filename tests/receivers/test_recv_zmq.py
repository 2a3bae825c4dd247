"""ZeroMQ msgpack receiver over real sockets: batches, bad messages, single-stream sources."""

import time

import pytest

from receivers.zmq_receiver import ZmqEventClient, ZmqReceiver


def wait_for(cond, timeout=5.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.01)
    return False


@pytest.fixture
def receiver(router):
    r = ZmqReceiver(router).start()
    yield r
    r.stop()


def test_batches_arrive_in_order(receiver, recorder, key):
    client = ZmqEventClient(receiver.url)
    for b in range(3):
        client.send(key, [[b * 10 + i, ["S", float(i), i, i, True]] for i in range(10)])
    assert wait_for(lambda: len(recorder.events) == 30)
    assert [ts for ts, _ in recorder.events] == [b * 10 + i for b in range(3) for i in range(10)]
    client.close()


def test_bad_message_is_counted_and_next_message_still_arrives(receiver, recorder, key, router):
    client = ZmqEventClient(receiver.url)
    client.send_raw([b"1/StockAnalysis/StockStream", b"\xc1not msgpack"])
    client.send_raw([b"only-one-frame"])
    client.send(("1", "StockAnalysis", "Nope"), [[1, ["A", 1.0, 1, 1, True]]])
    client.send(key, [[1, ["A", 1.0, 1, 1, True]], [2, ["bad"]]])
    assert wait_for(lambda: len(recorder.events) == 1)
    assert wait_for(lambda: receiver.bad_messages == 3)
    assert router.counters()["/".join(key)]["rejected"] == 1
    client.close()


def test_single_stream_receiver_takes_one_frame_messages(router, recorder, key):
    r = ZmqReceiver(router, default_key=key).start()
    try:
        from cep.protocol.frames import encode_pairs

        client = ZmqEventClient(r.url)
        client.send_raw([encode_pairs([[5, ["A", 1.0, 1, 1, True]]])])
        assert wait_for(lambda: recorder.events == [(5, ("A", 1.0, 1, 1, True))])
        client.close()
    finally:
        r.stop()


def test_a_send_with_a_timeout_raises_when_no_receiver_takes_it(key):
    """A client whose peer never takes its messages (nothing listens; a refused CURVE
    handshake is the same) gives up after send_timeout_ms instead of blocking for ever."""
    import socket

    import zmq

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    client = ZmqEventClient(f"tcp://127.0.0.1:{port}", sndhwm=2, send_timeout_ms=200)
    sent, started = 0, time.monotonic()
    try:
        with pytest.raises(zmq.Again):
            for _ in range(50):
                client.send(key, [[1, ["A", 1.0, 1, 1, True]]])
                sent += 1
    finally:
        client.close()
    waited = time.monotonic() - started
    print(f"gave up after {sent} sends and {waited:.2f} s")
    assert sent < 50 and waited > 0.15  # it did wait for the send timeout (200 ms), then gave up


def test_messages_queued_while_the_downstream_works_go_on_in_one_call(stock_def, key):
    """A downstream that answers only when the events are durable (JetStream's confirmation,
    a log with fsync) serves every message that arrived meanwhile in its next call, in
    order, instead of one message per call."""
    import threading

    from receivers.router import IngestRouter

    calls, gate = [], threading.Event()

    def deliver(events, wait=0.0):
        calls.append([ts for ts, _ in events])
        gate.wait(5)  # the first call holds the receiver while 20 more messages queue
        return 0

    router = IngestRouter()
    router.register(key, stock_def, deliver)
    r = ZmqReceiver(router).start()
    client = ZmqEventClient(r.url)
    try:
        client.send(key, [[0, ["A", 1.0, 1, 1, True]]])
        assert wait_for(lambda: len(calls) == 1)
        for i in range(1, 21):
            client.send(key, [[i, ["A", 1.0, 1, 1, True]]])
        time.sleep(0.3)  # the 20 messages are in the receiver's socket
        gate.set()
        assert wait_for(lambda: sum(len(c) for c in calls) == 21)
        assert [ts for c in calls for ts in c] == list(range(21))
        assert len(calls) < 21  # messages went on together
    finally:
        client.close()
        r.stop()
