"""Sinks under the host policy with real destinations: the HTTP sink connects only to an
address that passed the allow-list (pinned, so a name re-pointed after validation cannot
redirect it) and sends valid JSON; the file sink re-checks its path when it opens."""

import json
import math
import os
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from cep.policy import HostPolicy
from cep.policy.hosts import HttpAllowList
from publishers.exceptions import SinkConfigError, SinkWriteError
from publishers.sinks import build_sink


class _Collect(BaseHTTPRequestHandler):
    got = []

    def do_POST(self):  # noqa: N802
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.got.append((self.headers["Host"], body))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    _Collect.got = []
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Collect)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield srv
    srv.shutdown()
    srv.server_close()


def resolver(answers):
    """A DNS stand-in: each call for a name returns the next answer in `answers[name]`."""
    calls = {}

    def resolve(host, port):
        seq = answers[host]
        i = min(calls.get(host, 0), len(seq) - 1)
        calls[host] = calls.get(host, 0) + 1
        return [(socket.AF_INET, a, port) for a in seq[i]]

    return resolve


def strict(text):
    return json.loads(text, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))


def test_http_sink_connects_to_the_checked_address_and_sends_valid_json(server):
    allow = HttpAllowList(["127.0.0.1"], resolver({"sink.example": [["127.0.0.1"]]}))
    from publishers.http_sink import HttpSink

    sink = HttpSink("S", {"url": f"http://sink.example:{server.server_port}/in"}, allow=allow)
    sink.write_batch([(1, ["a", math.nan]), (2, ["b", math.inf])])
    sink.close()
    ((host, body),) = _Collect.got
    assert host == f"sink.example:{server.server_port}"  # the name, sent to the pinned address
    assert [e["data"] for e in strict(body)] == [["a", None], ["b", None]]


def test_http_sink_rebinding_after_validation_is_refused(server):
    """Validated while the name pointed at a public address; at connect time it points at
    loopback: the write fails and the local server receives nothing."""
    allow = HttpAllowList(
        ["public"], resolver({"evil.example": [["93.184.216.34"], ["127.0.0.1"]]})
    )
    from publishers.http_sink import HttpSink

    sink = HttpSink("S", {"url": f"http://evil.example:{server.server_port}/"}, allow=allow)
    with pytest.raises(SinkWriteError, match="loopback"):
        sink.write_batch([(1, ["a", 1.0])])
    assert _Collect.got == []


def test_worker_policy_refuses_http_sink_without_allow_list(server):
    with pytest.raises(SinkConfigError, match="not on the HTTP sink allow-list"):
        build_sink(
            {"type": "http", "options": {"url": f"http://127.0.0.1:{server.server_port}/"}},
            "S",
            HostPolicy(),
            -1234,
        )
    assert _Collect.got == []


def test_file_sink_rechecks_when_it_opens(tmp_path):
    """The folder was inside the root when the sink was built; it is swapped for a symlink to
    another place before the first write: the write fails and nothing lands outside."""
    root = tmp_path / "root" / "-1234"
    (root / "out").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    policy = HostPolicy(file_roots=(str(tmp_path / "root" / "{tenant}"),))
    sink = build_sink({"type": "file", "options": {"path": "out/a.jsonl"}}, "S", policy, -1234)
    os.rmdir(root / "out")
    os.symlink(outside, root / "out")
    with pytest.raises(SinkWriteError, match="symbolic link"):
        sink.write_batch([(1, ["x"])])
    assert list(outside.iterdir()) == []
