"""The event simulator replays a JSON-lines file into an HTTP receiver (a real local server)."""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from receivers.simulator import Simulator, load_events


class _Receiver(BaseHTTPRequestHandler):
    received = []

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        bad = [e for e in body if e["data"][1] < 0]  # a negative price is "rejected"
        type(self).received.append((self.path, body))
        reply = json.dumps({"accepted": len(body) - len(bad), "rejected": len(bad)}).encode()
        self.send_response(200 if len(bad) < len(body) else 400)
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args):
        pass


@pytest.fixture
def receiver():
    _Receiver.received = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", _Receiver.received
    server.shutdown()


def _write(tmp_path, lines):
    path = tmp_path / "events.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return path


def test_replays_every_event_restamped_to_now(tmp_path, receiver):
    url, received = receiver
    path = _write(
        tmp_path,
        [
            {"stream": "S", "timestamp": 1000, "data": ["IBM", 1.0]},
            {"timestamp": 1500},  # a clock-only line is not an event
            {"stream": "S", "timestamp": 2000, "data": ["WSO2", 2.0]},
            {"stream": "T", "timestamp": 3000, "data": ["X", 3.0]},
        ],
    )
    events = load_events(path)
    assert [e[1] for e in events] == ["S", "S", "T"]
    before = int(time.time() * 1000)
    sim = Simulator(url, -1234, "P", events, rate=1000, batch=10)
    assert sim.run() == (3, 3)
    paths = sorted(p for p, _ in received)
    assert paths == ["/events/-1234/P/S", "/events/-1234/P/T"]
    sent = [e for _, body in received for e in body]
    assert sorted(e["data"][0] for e in sent) == ["IBM", "WSO2", "X"]
    assert all(e["timestamp"] >= before for e in sent)


def test_keep_time_and_rejections_are_counted(tmp_path, receiver):
    url, received = receiver
    path = _write(
        tmp_path,
        [
            {"stream": "S", "timestamp": 1000, "data": ["A", 1.0]},
            {"stream": "S", "timestamp": 2000, "data": ["B", -1.0]},
        ],
    )
    sim = Simulator(url, 1, "P", load_events(path), rate=1000, batch=1, keep_time=True)
    assert sim.run() == (2, 1)
    assert sim.rejected == 1
    assert [e["timestamp"] for _, body in received for e in body] == [1000, 2000]


def test_rate_paces_the_batches(tmp_path, receiver):
    url, _ = receiver
    path = _write(tmp_path, [{"stream": "S", "data": ["A", 1.0]}] * 6)
    started = time.monotonic()
    Simulator(url, 1, "P", load_events(path), rate=20, batch=2).run()
    assert time.monotonic() - started >= 0.25  # 3 batches of 2 at 20 events/s: 0.1 s apart
