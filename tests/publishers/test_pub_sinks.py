"""Sinks against real destinations: file, log, HTTP server, ZeroMQ SUB socket, redis-server."""

import json
import logging
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import redis
import zmq

from cep.protocol.frames import decode_batch
from publishers.exceptions import SinkConfigError, SinkWriteError
from publishers.sinks import build_sink, sink_specs_from_annotations
from cep.model import Annotation

EVENTS = [(1000, ("IBM", 510.5, 100)), (1001, ("WSO2", None, 7))]
LINES = [
    '{"stream": "High", "timestamp": 1000, "data": ["IBM", 510.5, 100]}',
    '{"stream": "High", "timestamp": 1001, "data": ["WSO2", null, 7]}',
]


def test_file_sink_writes_json_lines_like_cep_run(tmp_path):
    path = tmp_path / "out" / "high.jsonl"
    sink = build_sink({"type": "file", "options": {"path": str(path)}}, "High")
    sink.write_batch(EVENTS)
    sink.write_batch(EVENTS[:1])
    sink.close()
    assert path.read_text().splitlines() == LINES + LINES[:1]
    assert sink.written == 3


def test_file_sink_unwritable_path_is_a_write_error(tmp_path):
    (tmp_path / "blocker").write_text("a file, not a directory")
    sink = build_sink({"type": "file", "path": str(tmp_path / "blocker" / "x.jsonl")}, "High")
    with pytest.raises(SinkWriteError, match="file sink"):
        sink.write_batch(EVENTS)


def test_log_sink():
    records = []
    handler = logging.Handler()
    handler.emit = records.append
    logger = logging.getLogger("publishers.log")
    logger.addHandler(handler)
    old = logger.level
    logger.setLevel(logging.INFO)
    try:
        build_sink({"type": "log", "options": {"prefix": "out: "}}, "High").write_batch(EVENTS)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old)
    assert [r.getMessage() for r in records] == ["out: " + line for line in LINES]


class _Collect(BaseHTTPRequestHandler):
    received = []
    status = 200

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        type(self).received.append((self.path, json.loads(body)))
        self.send_response(type(self).status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def http_collector():
    handler = type("Collect", (_Collect,), {"received": [], "status": 200})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server, handler
    server.shutdown()
    server.server_close()


def test_http_sink_posts_each_batch_as_an_array(http_collector):
    server, handler = http_collector
    url = f"http://127.0.0.1:{server.server_port}/hook?x=1"
    sink = build_sink({"type": "http", "options": {"publisher.url": url}}, "High")
    sink.write_batch(EVENTS)
    sink.write_batch(EVENTS[1:])
    assert handler.received[0] == ("/hook?x=1", [json.loads(line) for line in LINES])
    assert len(handler.received) == 2 and sink.written == 3
    sink.close()


def test_http_sink_error_status_is_a_write_error(http_collector):
    server, handler = http_collector
    handler.status = 500
    sink = build_sink({"type": "http", "url": f"http://127.0.0.1:{server.server_port}/"}, "High")
    with pytest.raises(SinkWriteError, match="HTTP 500"):
        sink.write_batch(EVENTS)


def test_zmq_pub_sink_reaches_a_subscriber():
    sink = build_sink({"type": "zmq", "options": {"url": "tcp://127.0.0.1:0"}}, "High")
    sub = zmq.Context.instance().socket(zmq.SUB)
    sub.setsockopt(zmq.SUBSCRIBE, b"High")
    sub.connect(sink.url)
    got = None
    deadline = time.monotonic() + 5
    while got is None and time.monotonic() < deadline:  # PUB drops until the SUB has joined
        sink.write_batch(EVENTS)
        if sub.poll(100):
            got = sub.recv_multipart()
    sub.close(0)
    sink.close()
    assert got is not None and got[0] == b"High"
    assert decode_batch(got[1]) == (
        "High",
        [[1000, ["IBM", 510.5, 100]], [1001, ["WSO2", None, 7]]],
    )


@pytest.mark.slow
def test_redis_sink_xadds_every_event(redis_db):
    redis_url = redis_db
    sink = build_sink({"type": "redis", "options": {"url": redis_url, "key": "alerts"}}, "High")
    sink.write_batch(EVENTS)
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    entries = client.xrange("alerts")
    assert [(e["timestamp"], json.loads(e["data"]), e["stream"]) for _, e in entries] == [
        ("1000", ["IBM", 510.5, 100], "High"),
        ("1001", ["WSO2", None, 7], "High"),
    ]
    sink.close()
    client.close()


def test_redis_sink_unreachable_is_a_write_error():
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    sink = build_sink(
        {"type": "redis", "options": {"url": f"redis://127.0.0.1:{port}/0", "timeout": "1"}}, "High"
    )
    with pytest.raises(SinkWriteError, match="redis sink"):
        sink.write_batch(EVENTS)


@pytest.mark.parametrize(
    "spec, fragment",
    [
        ({"type": "nosuch"}, "unknown type 'nosuch'; known: log, file, http, zmq, redis, nats"),
        ({"type": "kafka"}, "a kafka connector needs connection='name'"),
        ({"type": "file", "options": {}}, "needs path="),
        ({"type": "http", "options": {"url": "ftp://x"}}, "is not an http"),
        ({"type": "log", "options": {"priority": "loud"}}, "priority='loud'"),
        (
            {"type": "zmq", "options": {"url": "tcp://127.0.0.1:0", "mode": "both"}},
            "bind or connect",
        ),
        ("file", "expected a mapping"),
    ],
)
def test_bad_sink_specs(spec, fragment):
    with pytest.raises(SinkConfigError, match=fragment):
        build_sink(spec, "High")


def test_sink_specs_from_annotations():
    anns = (
        Annotation("Export", elements=((None, "High:1.0.0"),)),
        Annotation("sink", elements=(("type", "file"), ("path", "/tmp/x.jsonl"))),
        Annotation("sink", elements=(("type", "log"),)),
    )
    assert sink_specs_from_annotations(anns) == [
        {"type": "file", "options": {"path": "/tmp/x.jsonl"}},
        {"type": "log", "options": {}},
    ]


def test_batch_lines_equal_event_json_for_every_shape():
    from publishers.base import batch_json_lines, event_json

    events = [(1, ("a", 1.5, None)), [2, ["b\u00e9", True, 3]], (3.0, ("c\n", -1, [1]))]
    assert batch_json_lines('S"x', events) == "".join(
        event_json('S"x', ts, row) + "\n" for ts, row in events
    )
