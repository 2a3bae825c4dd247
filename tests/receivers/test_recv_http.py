"""HTTP JSON receiver over a real socket: counts, reasons, status codes."""
import json
import urllib.error
import urllib.request

import pytest

from receivers.http_receiver import HttpServer, create_app


@pytest.fixture
def server(router):
    srv = HttpServer(create_app(router)).start()
    yield srv
    srv.stop()


def post(url, body, raw=False):
    data = body if raw else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method="POST",
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_one_event(server, recorder):
    status, body = post(f"{server.url}/events/1/StockAnalysis/StockStream",
                        {"timestamp": 7, "data": ["IBM", 1.0, 2, 3, True]})
    assert status == 200 and body == {"accepted": 1, "rejected": 0, "errors": []}
    assert recorder.events == [(7, ("IBM", 1.0, 2, 3, True))]


def test_array_with_a_bad_event_keeps_its_neighbours(server, recorder):
    status, body = post(f"{server.url}/events/1/StockAnalysis/StockStream", [
        {"timestamp": 1, "data": ["A", 1.0, 2, 3, True]},
        {"timestamp": 2, "data": ["B", "x", 2, 3, True]},
        {"timestamp": 3, "data": ["C", 1.0, 2, 3, True]}])
    assert status == 200
    assert (body["accepted"], body["rejected"]) == (2, 1)
    assert body["errors"][0]["index"] == 1 and "'price'" in body["errors"][0]["reason"]
    assert [e[0] for e in recorder.events] == [1, 3]


def test_all_rejected_is_400(server):
    status, body = post(f"{server.url}/events/1/StockAnalysis/StockStream", [["A"]])
    assert status == 400 and body["rejected"] == 1


def test_not_json_is_400(server):
    status, body = post(f"{server.url}/events/1/StockAnalysis/StockStream", b"{nope", raw=True)
    assert status == 400 and "not JSON" in body["error"]


def test_unknown_stream_is_404(server):
    status, body = post(f"{server.url}/events/1/StockAnalysis/Other", [])
    assert status == 404 and "no stream 1/StockAnalysis/Other" in body["error"]


def test_json_lines_body_with_a_bad_line(server, recorder):
    body = (b'{"timestamp": 1, "data": ["A", 1.0, 2, 3, true]}\n{oops\n'
            b'{"timestamp": 3, "data": ["C", 1.0, 2, 3, true]}\n')
    status, reply = post(f"{server.url}/events/1/StockAnalysis/StockStream", body, raw=True)
    assert status == 200 and (reply["accepted"], reply["rejected"]) == (2, 1)
    assert reply["errors"][0]["index"] == 1
    assert reply["errors"][0]["reason"].startswith("line 2 is not JSON")
    assert [e[0] for e in recorder.events] == [1, 3]
