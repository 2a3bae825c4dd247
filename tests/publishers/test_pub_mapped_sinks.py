"""Sinks with a @map, against real destinations: the HTTP sink posts one mapped body per batch
(or per event for ungrouped text), the ZeroMQ sink sends the mapped frame, the Redis sink
writes key-value fields, the log sink logs the mapped message, and a bad map is refused when
the sink is built. What they send is read back with the matching input mapper."""

import logging
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import redis
import zmq

from cep.mapping import MapSpec, input_mapper
from cep.model import Annotation, Attribute, AttrType, StreamDefinition
from publishers.exceptions import SinkConfigError
from publishers.sinks import build_sink, sink_specs_from_annotations

HIGH = StreamDefinition(
    "High",
    (
        Attribute("symbol", AttrType.STRING),
        Attribute("price", AttrType.DOUBLE),
        Attribute("volume", AttrType.LONG),
    ),
)
EVENTS = [(1000, ("IBM", 510.5, 100)), (1001, ("WSO2 <&>", 2.0, 7))]
ROWS = [e[1] for e in EVENTS]


def spec(kind, options, mapping):
    return {"type": kind, "options": options, "map": mapping.to_dict(), "definition": HIGH}


def decoded(mapping, messages):
    return [r for _, r in input_mapper(mapping, HIGH).decode(messages).pairs]


class _Collect(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        type(self).received.append((self.headers["Content-Type"], body))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def http_collector():
    handler = type("Collect", (_Collect,), {"received": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server, handler
    server.shutdown()
    server.server_close()


def test_http_sink_posts_one_cep40_xml_document_per_batch(http_collector):
    server, handler = http_collector
    sink = build_sink(
        spec("http", {"publisher.url": f"http://127.0.0.1:{server.server_port}/"}, MapSpec("xml")),
        "High",
    )
    sink.write_batch(EVENTS)
    sink.close()
    ((ctype, body),) = handler.received
    assert ctype == "application/xml" and body.startswith(b"<events><event><payloadData>")
    assert decoded(MapSpec("xml"), [body]) == ROWS and sink.written == 2


def test_http_sink_posts_ungrouped_text_one_event_a_request(http_collector):
    server, handler = http_collector
    template = MapSpec("text", {}, (), ((None, "{{symbol}}|{{price}}|{{volume}}"),))
    sink = build_sink(
        spec("http", {"url": f"http://127.0.0.1:{server.server_port}/"}, template), "High"
    )
    sink.write_batch(EVENTS)
    sink.close()
    assert [b for _, b in handler.received] == [b"IBM|510.5|100", b"WSO2 <&>|2.0|7"]
    regex = MapSpec(
        "text",
        {"regex.A": r"(.*)\|(.*)\|(.*)"},
        (("symbol", "A[1]"), ("price", "A[2]"), ("volume", "A[3]")),
    )
    assert decoded(regex, [b for _, b in handler.received]) == ROWS


def test_zmq_sink_sends_the_mapped_json_frame():
    sink = build_sink(spec("zmq", {"url": "tcp://127.0.0.1:0"}, MapSpec("json")), "High")
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
    assert got is not None and got[1].startswith(b'[{"event":{"payloadData":')
    assert decoded(MapSpec("json"), [got[1]]) == ROWS


@pytest.mark.slow
def test_redis_sink_writes_keyvalue_fields(redis_db):
    mapping = MapSpec("keyvalue", {}, (), (("sym", "symbol"), ("px", "price"), ("vol", "volume")))
    sink = build_sink(spec("redis", {"url": redis_db, "key": "kv"}, mapping), "High")
    sink.write_batch(EVENTS)
    sink.close()
    client = redis.Redis.from_url(redis_db, decode_responses=True)
    fields = [e for _, e in client.xrange("kv")]
    client.close()
    assert fields[0] == {"sym": "IBM", "px": "510.5", "vol": "100"}
    back = MapSpec("keyvalue", {}, (("symbol", "sym"), ("price", "px"), ("volume", "vol")))
    assert decoded(back, fields) == ROWS


def test_log_sink_logs_the_mapped_message():
    records = []
    handler = logging.Handler()
    handler.emit = records.append
    logger = logging.getLogger("publishers.log")
    logger.addHandler(handler)
    old = logger.level
    logger.setLevel(logging.INFO)
    try:
        build_sink(spec("log", {}, MapSpec("text")), "High").write_batch(EVENTS[:1])
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old)
    assert [r.getMessage() for r in records] == ["symbol:IBM,\nprice:510.5,\nvolume:100"]


def test_file_sink_writes_one_csv_line_an_event(tmp_path):
    path = tmp_path / "o.csv"
    sink = build_sink(spec("file", {"path": str(path)}, MapSpec("csv")), "High")
    sink.write_batch(EVENTS)
    sink.close()
    assert path.read_text() == "IBM,510.5,100\nWSO2 <&>,2.0,7\n"
    assert decoded(MapSpec("csv"), [path.read_text()]) == ROWS


def test_sink_specs_from_annotations_carry_the_map():
    ann = Annotation(
        "sink",
        elements=(("type", "file"), ("path", "x")),
        annotations=(
            Annotation(
                "map",
                elements=(("type", "xml"),),
                annotations=(Annotation("payload", elements=((None, "<a>{{symbol}}</a>"),)),),
            ),
        ),
    )
    (got,) = sink_specs_from_annotations([ann])
    assert got["map"] == {
        "type": "xml",
        "options": {},
        "attributes": [],
        "payload": [[None, "<a>{{symbol}}</a>"]],
    }


@pytest.mark.parametrize(
    "mapping,fragment",
    [
        (MapSpec("yaml"), "not a known map type"),
        (MapSpec("xml", {}, (), ((None, "<a>{{nosuch}}</a>"),)), "nosuch"),
        (MapSpec("json", {"bogus": "1"}), "no option 'bogus'"),
    ],
)
def test_a_bad_sink_map_is_refused_when_the_sink_is_built(tmp_path, mapping, fragment):
    with pytest.raises(SinkConfigError, match=fragment):
        build_sink(spec("file", {"path": str(tmp_path / "o")}, mapping), "High")
