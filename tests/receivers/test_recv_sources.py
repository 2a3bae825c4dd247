"""@source(...) sources: file (JSON lines, bad lines skipped), zmq and http on their own ports."""

import json
import time
import urllib.request

import pytest

from cep.model import Annotation
from receivers.exceptions import SourceConfigError, SourceReadError
from receivers.file_source import FileSource
from receivers.sources import build_source, source_options
from cep.protocol.frames import encode_pairs
from receivers.zmq_receiver import ZmqEventClient


def wait_for(cond, timeout=5.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end and not cond():
        time.sleep(0.01)
    return cond()


def test_file_source_reads_batches_and_skips_bad_lines(tmp_path):
    p = tmp_path / "in.jsonl"
    p.write_text(
        '{"timestamp": 1, "data": ["A", 1.0, 1, 1, true]}\nnot json\n\n'
        '{"timestamp": 2, "data": ["B", 2.0, 1, 1, true]}\n'
    )
    src = FileSource(p, batch_size=1)
    batches = [src.next_batch() for _ in range(4)]
    assert [len(b) for b in batches] == [1, 1, 0, 0] and src.done
    assert src.bad_lines[0][0] == 2 and "line 2 is not JSON" in src.bad_lines[0][1]
    assert src.snapshot()[1] == 4
    src.close()


def test_file_source_resumes_from_snapshot(tmp_path):
    p = tmp_path / "in.jsonl"
    p.write_text("".join(json.dumps({"timestamp": i, "data": []}) + "\n" for i in range(5)))
    src = FileSource(p, batch_size=2)
    src.next_batch()
    state = src.snapshot()
    src.close()
    again = FileSource(p, batch_size=10, resume_state=state)
    assert [e["timestamp"] for e in again.next_batch()] == [2, 3, 4]
    again.close()


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(SourceReadError, match="cannot open"):
        FileSource(tmp_path / "nope.jsonl")


def test_file_source_from_annotation(tmp_path, router, recorder, key):
    p = tmp_path / "in.jsonl"
    p.write_text('{"stream": "StockStream", "timestamp": 3, "data": ["A", 1.0, 1, 1, true]}\n')
    ann = Annotation("source", elements=(("type", "file"), ("path", str(p))))
    src = build_source(source_options(ann), router, key).start()
    assert wait_for(lambda: recorder.events == [(3, ("A", 1.0, 1, 1, True))])
    src.stop()


def test_zmq_and_http_sources_on_own_ports(router, recorder, key):
    z = build_source({"type": "zmq", "url": "tcp://127.0.0.1:0"}, router, key).start()
    h = build_source({"type": "http", "port": "0", "host": "127.0.0.1"}, router, key)
    assert h.describe()["url"] == "worker endpoint"  # port 0 means: the worker's endpoint only
    client = ZmqEventClient(z.describe()["url"])
    client.send_raw([encode_pairs([[1, ["A", 1.0, 1, 1, True]]])])
    assert wait_for(lambda: len(recorder.events) == 1)
    client.close()
    z.stop()


def test_http_source_with_port(router, recorder, key):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    h = build_source({"type": "http", "port": str(port), "host": "127.0.0.1"}, router, key).start()
    try:
        req = urllib.request.Request(
            f"http://127.0.0.1:{port}/",
            method="POST",
            data=json.dumps([["A", 1.0, 1, 1, True]]).encode(),
        )
        with urllib.request.urlopen(req, timeout=5) as resp:
            assert json.loads(resp.read())["accepted"] == 1
        assert len(recorder.events) == 1
    finally:
        h.stop()


def test_http_source_with_wso2_receiver_url(router, recorder, key):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/endpoints/stock"
    h = build_source({"type": "http", "receiver.url": url}, router, key).start()
    try:
        req = urllib.request.Request(
            url, method="POST", data=json.dumps({"data": ["A", 1.0, 1, 1, True]}).encode()
        )
        with urllib.request.urlopen(req, timeout=5) as resp:
            assert json.loads(resp.read())["accepted"] == 1
        assert h.describe()["url"] == f"http://127.0.0.1:{port}"
    finally:
        h.stop()


@pytest.mark.parametrize(
    "options, fragment",
    [
        ({"type": "http", "receiver.url": "ftp://x:1/"}, "must be http://host:port"),
        ({"type": "carrierpigeon"}, "unknown type 'carrierpigeon'; known: http, zmq, file, nats"),
        ({"type": "kafka"}, "a kafka connector needs connection='name'"),
        ({"type": "file"}, "needs path="),
        ({"type": "http", "port": "eighty"}, "is not an integer"),
    ],
)
def test_bad_source_config(router, key, options, fragment):
    with pytest.raises(SourceConfigError, match=fragment):
        build_source(options, router, key)
