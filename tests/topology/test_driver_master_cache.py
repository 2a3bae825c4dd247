"""Issue 9: however many pollers ask a plan's status, its driver asks the Spark master at most
once a second. A real Driver (its ZeroMQ control socket, no Spark) with a fake master web UI
that counts the requests; 10 threads poll the status through TopologyHandle."""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from topology.control import TopologyHandle
from topology.driver import Driver
from topology.master_watch import CachedMaster
from topology.model import Topology
from topology.testing import CollectBolt, ListSpout


class FakeMaster:
    """GET /json/ as the Spark master answers it: this app WAITING, every core in use."""

    def __init__(self):
        self.requests = 0
        master = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - http.server's name
                master.requests += 1
                body = json.dumps(
                    {
                        "activeapps": [{"id": "app-1", "state": "WAITING"}],
                        "cores": 2,
                        "coresused": 2,
                    }
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def master():
    m = FakeMaster()
    yield m
    m.server.shutdown()
    m.server.server_close()


def topology():
    t = Topology("Polled")
    t.add_spout("src", ListSpout, outputs={"default": ["x"]}, config={"rows": []})
    t.add_bolt("sink", CollectBolt, inputs={"src": "shuffle"}, parallelism=2)
    return t


def test_ten_pollers_cause_at_most_one_master_request_per_second(tmp_path, master):
    launch = {
        "host": "127.0.0.1",
        "executors": 1,
        "kill_wait_secs": 1,
        "master_ui_url": master.url,
        "options": {},
    }
    (tmp_path / "launch.json").write_text(json.dumps(launch))
    driver = Driver(topology(), launch, tmp_path)
    driver.phase, driver.app_id = "waiting", "app-1"  # tasks not started: it asks the master
    stop, served, replies = threading.Event(), threading.Event(), []

    def serve():  # the driver's control loop, answering one request at a time
        while not served.is_set():
            if driver.rep.poll(20):
                driver._answer_raw(driver.rep.recv())

    def poll():
        handle = TopologyHandle("Polled", tmp_path)
        while not stop.is_set():
            replies.append(handle.request({"cmd": "status"}))

    server = threading.Thread(target=serve, daemon=True)
    pollers = [threading.Thread(target=poll, daemon=True) for _ in range(10)]
    for t in [server] + pollers:
        t.start()
    time.sleep(3.2)
    stop.set()
    for t in pollers:
        t.join(5)
    served.set()
    server.join(5)
    driver.zctx.destroy(linger=0)
    assert len(replies) >= 20  # 10 pollers kept the driver busy
    assert {r["status"] for r in replies} == {"WAITING_FOR_SLOTS"}
    assert "the cluster has 2, 0 free" in replies[-1]["reason"]
    assert 1 <= master.requests <= 5  # 3.2 s: at most one a second (+1 for the first)
    assert driver.master.requests == master.requests


def test_the_cache_keeps_a_missing_master_for_the_ttl_too():
    calls, now = [], [0.0]
    cache = CachedMaster(
        "http://m", ttl=1.0, fetch=lambda url, timeout: calls.append(url), clock=lambda: now[0]
    )
    assert cache.state() is None and cache.state() is None and len(calls) == 1
    now[0] = 0.99
    cache.state()
    assert len(calls) == 1
    now[0] = 1.0
    cache.state()
    assert len(calls) == 2
