"""The receiver spout on real sockets: a malformed event loses only itself, and large frames
do not make unbounded batches (max_events)."""

import pytest
import zmq

from cep.protocol.registry_client import RegistryClient
from manager.registry.service import RegistryService
from cep.protocol.frames import encode_batch
from receivers.spout import ReceiverSpout
from topology.component import Collector, Context

T, P = -1234, "Frames"
OUT = {"S": ["ts", "a", "b"]}


@pytest.fixture
def spout_and_push():
    reg = RegistryService(port=0, bind_host="127.0.0.1", heartbeat_interval=0.1)
    reg.start()
    spout = ReceiverSpout(
        {
            "registry": f"tcp://127.0.0.1:{reg.port}",
            "tenant": T,
            "plan": P,
            "streams": {"S": ["a", "b"]},
            "host": "127.0.0.1",
            "tick_ms": 0,
            "max_events": 2500,
        }
    )
    collector = Collector("EventReceiverSpout", OUT)
    spout.open(Context(f"{P}[{T}]", "EventReceiverSpout", 0, 1, 0, OUT), collector)
    client = RegistryClient(f"tcp://127.0.0.1:{reg.port}")
    push = zmq.Context.instance().socket(zmq.PUSH)
    push.setsockopt(zmq.LINGER, 0)
    push.connect(client.lookup("receiver", T, P, stream="S")["endpoint"])
    yield spout, collector, push
    push.close(0)
    spout.close()
    client.close()
    reg.stop()


def drain(spout, collector, batches=50):
    out = []
    for _ in range(batches):
        spout.next_batch()
        out.extend(rows for _, rows, _ in collector.take())
    return out


def wait_frames(spout, n):
    for _ in range(n):
        assert spout.sock.poll(3000)


def test_a_malformed_event_loses_only_itself(spout_and_push):
    spout, collector, push = spout_and_push
    push.send(encode_batch("S", [[1, ["x", 1]], [2, None], [3, ["y", 2]], [4], [5, ["z", 3]]]))
    wait_frames(spout, 1)
    rows = [r for batch in drain(spout, collector, 1) for r in batch]
    assert rows == [(1, "x", 1), (3, "y", 2), (5, "z", 3)]
    assert spout.dropped == 2


def test_large_frames_make_bounded_batches_and_lose_nothing(spout_and_push):
    spout, collector, push = spout_and_push
    for f in range(10):
        push.send(encode_batch("S", [[f * 2000 + i, ["k", i]] for i in range(2000)]))
    batches = []
    for _ in range(200):
        spout.sock.poll(100)
        batches.extend(drain(spout, collector, 1))
        if sum(map(len, batches)) >= 20000:
            break
    assert [r[0] for b in batches for r in b] == list(range(20000))
    assert max(map(len, batches)) <= 4000  # stops taking frames at 2,500 events
