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
    req = urllib.request.Request(
        url, data=data, method="POST", headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_one_event(server, recorder):
    status, body = post(
        f"{server.url}/events/1/StockAnalysis/StockStream",
        {"timestamp": 7, "data": ["IBM", 1.0, 2, 3, True]},
    )
    assert status == 200 and body == {"accepted": 1, "rejected": 0, "errors": []}
    assert recorder.events == [(7, ("IBM", 1.0, 2, 3, True))]


def test_array_with_a_bad_event_keeps_its_neighbours(server, recorder):
    status, body = post(
        f"{server.url}/events/1/StockAnalysis/StockStream",
        [
            {"timestamp": 1, "data": ["A", 1.0, 2, 3, True]},
            {"timestamp": 2, "data": ["B", "x", 2, 3, True]},
            {"timestamp": 3, "data": ["C", 1.0, 2, 3, True]},
        ],
    )
    assert status == 207  # a partial acceptance is never 200: the reply names what was not
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
    assert "StockStream" not in json.dumps(body)  # only what was asked: no served stream


def test_json_lines_body_with_a_bad_line(server, recorder):
    body = (
        b'{"timestamp": 1, "data": ["A", 1.0, 2, 3, true]}\n{oops\n'
        b'{"timestamp": 3, "data": ["C", 1.0, 2, 3, true]}\n'
    )
    status, reply = post(f"{server.url}/events/1/StockAnalysis/StockStream", body, raw=True)
    assert status == 207 and (reply["accepted"], reply["rejected"]) == (2, 1)
    assert reply["errors"][0]["index"] == 1
    assert reply["errors"][0]["reason"].startswith("line 2 is not JSON")
    assert [e[0] for e in recorder.events] == [1, 3]


def post_full(url, body):
    """(status, reply, Retry-After) of a POST."""
    req = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.status, json.loads(resp.read()), resp.headers.get("Retry-After")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read()), exc.headers.get("Retry-After")


@pytest.fixture
def full_server(stock_def, make_recorder):
    """A receiver whose stream's buffer holds 2 events, and a switch for `ready`."""
    from receivers.router import IngestRouter

    router, state = IngestRouter(), {"ready": True}
    router.register(("1", "StockAnalysis", "StockStream"), stock_def, make_recorder(capacity=2))
    srv = HttpServer(create_app(router, ready=lambda: state["ready"])).start()
    yield srv, state
    srv.stop()


def event(ts, price=1.0):
    return {"timestamp": ts, "data": ["A", price, 2, 3, True]}


def test_a_full_buffer_answers_207_with_the_refused_indices_then_503(full_server):
    srv, _ = full_server
    url = f"{srv.url}/events/1/StockAnalysis/StockStream"
    status, body, retry = post_full(url, [event(1), event(2, "x"), event(3), event(4)])
    assert status == 207 and retry == "1"  # partly: never 200
    assert (body["accepted"], body["rejected"], body["refused"]) == (2, 1, 1)
    assert body["refused_indices"] == [3] and body["errors"][0]["index"] == 1
    status, body, retry = post_full(url, [event(5), event(6)])  # nothing fits now
    assert status == 503 and retry == "1" and body["accepted"] == 0
    assert body["refused_indices"] == [0, 1] and body["reason"] == "backpressure"


def test_a_worker_still_syncing_its_plans_answers_503_not_404(full_server):
    srv, state = full_server
    state["ready"] = False
    status, body, retry = post_full(f"{srv.url}/events/1/Later/S", [event(1)])
    assert status == 503 and retry == "1" and body["reason"] == "starting"
    state["ready"] = True
    status, body, _ = post_full(f"{srv.url}/events/1/Later/S", [event(1)])
    assert status == 404 and "StockStream" not in json.dumps(body)
