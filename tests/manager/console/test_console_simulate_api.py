"""POST /api/v1/tenants/<t>/plans/<n>/simulate: events for a plan's imported stream sent
through a live worker's HTTP receiver. The worker here is the real HTTP receiver (events
blueprint, IngestRouter, validation) on a free port, delivering into a list instead of a
spout; the worker list the manager would learn from heartbeats is given by monkeypatch."""

import time

import pytest

import cep
from manager.web.console import data
from receivers.http_receiver import HttpServer, create_app as receiver_app
from receivers.router import IngestRouter
from receivers.validation import StreamKey

SAMPLE = open("conf/samples/StockAnalysis.siddhiql").read()
URL = "/api/v1/tenants/-1234/plans/StockAnalysis/simulate"


class FakeWorker:
    """A worker's real HTTP receiver serving StockAnalysis' StockStream; records deliveries."""

    def __init__(self):
        self.delivered, self.times = [], []
        router = IngestRouter()
        definition = cep.compile(SAMPLE).stream("StockStream")
        router.register(
            StreamKey("-1234", "StockAnalysis", "StockStream"), definition, self.deliver
        )
        self.server = HttpServer(receiver_app(router), "127.0.0.1", 0).start()

    def deliver(self, events, wait):
        self.delivered.extend(events)
        self.times.append(time.monotonic())
        return 0

    def rows(self):
        return [tuple(row) for _, row in self.delivered]


@pytest.fixture
def worker(client, monkeypatch):
    assert client.post("/api/v1/tenants/-1234/plans", data=SAMPLE).status_code == 201
    w = FakeWorker()
    listing = [
        {
            "id": "w-stale",
            "url": "http://127.0.0.1:9",
            "stale": True,
            "roles": ["receiver"],
            "plans": ["-1234/StockAnalysis"],
            "heartbeatAgeSec": 99.0,
        },
        {
            "id": "w1",
            "url": w.server.url,
            "stale": False,
            "roles": ["receiver", "publisher"],
            "plans": ["-1234/StockAnalysis"],
            "heartbeatAgeSec": 1.0,
        },
    ]
    monkeypatch.setattr(data, "workers", lambda: listing)
    yield w
    w.server.stop()


def test_form_event_reaches_the_worker(client, worker):
    resp = client.post(URL, json={"stream": "StockStream", "events": [["SIMU", 777.5, 4242]]})
    assert resp.status_code == 200, resp.get_json()
    assert resp.get_json() == {"sent": 1, "worker": "w1", "accepted": 1, "rejected": []}
    assert worker.rows() == [("SIMU", 777.5, 4242)]


def test_jsonl_file_at_a_rate_with_a_bad_event(client, worker):
    lines = [f'{{"data": ["S{i}", {100 + i}.5, {i}]}}' for i in range(20)]
    lines[7] = '{"data": ["BAD", "cheap", 1]}'
    lines[9] = '{"stream": "StockStream", "timestamp": 1700000000000, "data": ["T", 1.0, 2]}'
    start = time.monotonic()
    resp = client.post(URL, json={"stream": "StockStream", "jsonl": "\n".join(lines), "rate": 100})
    elapsed = time.monotonic() - start
    body = resp.get_json()
    assert resp.status_code == 200, body
    assert (body["sent"], body["accepted"]) == (20, 19)
    assert [r["index"] for r in body["rejected"]] == [7] and "price" in body["rejected"][0][
        "reason"
    ]
    assert len(worker.delivered) == 19 and worker.delivered[8][0] == 1700000000000
    # 100/s = 10 events every 0.1 s: two batches, the second one not before 0.1 s after the
    # start (the gap between arrivals is shorter when the first post was slow to arrive)
    assert len(worker.times) == 2 and worker.times[1] - start >= 0.09
    assert elapsed >= 0.09


def test_unknown_stream_and_bad_bodies_are_400(client, worker):
    cases = [
        {"stream": "Nope", "events": [["A", 1.0, 1]]},
        {"stream": "StockStream", "events": "A,1,1"},
        {"stream": "StockStream", "events": [["A", 1.0, 1]], "rate": 0},
        {"stream": "StockStream", "jsonl": "{oops"},
        {"stream": "StockStream", "events": []},
        {"stream": "StockStream", "events": [["A", 1.0, 1]] * 5000, "rate": 1},
    ]
    for body in cases:
        resp = client.post(URL, json=body)
        assert resp.status_code == 400, (body, resp.get_json())
        assert resp.get_json()["error"] == "BadConsoleRequestError"
    assert worker.delivered == []


def test_unknown_plan_is_404(client, worker):
    resp = client.post(
        "/api/v1/tenants/-1234/plans/Nope/simulate",
        json={"stream": "StockStream", "events": [["A", 1.0, 1]]},
    )
    assert resp.status_code == 404 and resp.get_json()["error"] == "PlanNotFoundError"


def test_no_live_worker_is_503(client, worker, monkeypatch):
    monkeypatch.setattr(
        data,
        "workers",
        lambda: [
            {
                "id": "w-stale",
                "url": worker.server.url,
                "stale": True,
                "plans": ["-1234/StockAnalysis"],
            },
            {"id": "w-other", "url": worker.server.url, "stale": False, "plans": ["-1234/Other"]},
        ],
    )
    resp = client.post(URL, json={"stream": "StockStream", "events": [["A", 1.0, 1]]})
    assert resp.status_code == 503 and "no live worker" in resp.get_json()["message"]
    assert worker.delivered == []


def test_a_worker_that_is_gone_is_a_502_without_a_stack_trace(client, worker, monkeypatch):
    worker.server.stop()
    resp = client.post(URL, json={"stream": "StockStream", "events": [["A", 1.0, 1]]})
    body = resp.get_json()
    assert resp.status_code == 502 and body["error"] == "WorkerRequestError"
    assert "not reachable" in body["message"] and "Traceback" not in body["message"]
    worker.server = HttpServer(receiver_app(IngestRouter()), "127.0.0.1", 0).start()  # for teardown
