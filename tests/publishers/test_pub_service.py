"""SinkSet failure isolation, and the publisher service over real ZeroMQ sockets."""

import json
import time

import pytest
import zmq

from cep.protocol.frames import encode_batch
from publishers.base import Sink
from publishers.exceptions import SinkWriteError, UnknownOutputStreamError
from publishers.service import PublisherService, numbered
from publishers.sink_set import SinkSet


class Broken(Sink):
    type = "broken"

    def write_batch(self, events):
        raise SinkWriteError("destination down")


class Keep(Sink):
    type = "keep"

    def __init__(self, stream):
        super().__init__(stream, {})
        self.events = []

    def write_batch(self, events):
        self.events.extend(events)


def wait_for(cond, timeout=5.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end and not cond():
        time.sleep(0.01)
    return cond()


def test_failing_sink_does_not_starve_its_neighbour():
    sset, keep = SinkSet("t/p"), Keep("S")
    sset.add("S", Broken("S", {}))
    sset.add("S", keep)
    sset.dispatch("S", [(1, ("a",))])
    assert keep.events == [(1, ("a",))]
    assert sset.metrics()["S"]["failed"] == 1 and sset.metrics()["S"]["events"] == 1


def test_unknown_stream():
    with pytest.raises(UnknownOutputStreamError, match="no sink for stream 'X'"):
        SinkSet("t/p").dispatch("X", [])


def test_from_specs_defaults_to_log():
    sset = SinkSet.from_specs({"S": [], "T": [{"type": "log", "options": {"prefix": ">"}}]})
    assert [s["type"] for s in sset.metrics()["S"]["sinks"]] == ["log"]
    assert sset.streams == ("S", "T")


def test_service_receives_bolt_frames_and_survives_bad_ones(tmp_path):
    out = tmp_path / "high.jsonl"
    sset = SinkSet.from_specs({"High": [{"type": "file", "options": {"path": str(out)}}]}, "p")
    svc = PublisherService(sset, bind_host="127.0.0.1").start()
    push = zmq.Context.instance().socket(zmq.DEALER)
    push.setsockopt(zmq.LINGER, 1000)
    push.connect(f"tcp://127.0.0.1:{svc.port}")
    push.send(b"not a numbered message")
    push.send_multipart(numbered(1, b"garbage"))
    push.send_multipart(numbered(2, encode_batch("Nope", [[1, ["x"]]])))
    push.send_multipart(
        numbered(3, encode_batch("High", [[1, ["IBM", 510.0, 3]], [2, ["X", 600.0, 1]]]))
    )
    push.send_multipart(numbered(4, encode_batch("High", [[3, ["Y", 700.0, 2]]])))
    assert wait_for(lambda: svc.events == 3)
    acks = []  # every numbered frame is acknowledged once handled, the bad ones too
    assert wait_for(lambda: (acks.extend(_acks(push)), acks)[1] == [1, 2, 3, 4])
    push.close()
    svc.stop()
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["timestamp"], r["data"][0]) for r in rows] == [(1, "IBM"), (2, "X"), (3, "Y")]
    # the unnumbered message, the garbage and the unknown stream's frame
    assert svc.metrics()["dropped_frames"] == 3 and svc.metrics()["frames"] == 2


def _acks(sock):
    out = []
    while sock.poll(0):
        out.append(int.from_bytes(sock.recv(), "little"))
    return out
