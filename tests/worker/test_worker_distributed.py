"""The worker in distributed mode against a real registry service, a stand-in manager REST
endpoint, and stand-in spout and publisher bolt on real ZeroMQ sockets (no Spark here; the
Spark end-to-end test is test_worker_e2e.py)."""

import json
import socket
import urllib.error
import urllib.request

import pytest

from cep.worker.config import load_config
from cep.worker.node import Worker
from receivers.zmq_receiver import ZmqEventClient
from tests.auth_helpers import worker_open


def post(url, body):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST")
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def get(url):
    with worker_open(url) as resp:  # /status needs the cluster secret
        return json.loads(resp.read())


_HELD = []  # bound, never listening: connections are refused and no other listener gets the port


def dead_url():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    _HELD.append(s)
    return f"http://127.0.0.1:{s.getsockname()[1]}"


def make_worker(fake_manager, registry_service, tmp_path, wid="w1", managers=None, **extra):
    cfg = load_config(
        path=tmp_path / "none.yaml",
        env={},
        overrides={
            **extra,
            "worker.id": wid,
            "worker.mode": "distributed",
            "worker.advertised_host": "127.0.0.1",
            "managers.urls": managers or [fake_manager.url],
            "managers.registries": [f"tcp://127.0.0.1:{registry_service.port}"]
            * len(managers or [fake_manager.url]),
            "managers.poll_interval": 0.2,
            "managers.timeout": 1.0,
            "receivers.http_host": "127.0.0.1",
            "receivers.http_port": 0,
            "receivers.zmq_host": "127.0.0.1",
            "receivers.zmq_port": 0,
            "transport.reconnect_interval": 0.1,
            "transport.heartbeat_interval": 0.5,
            "sinks.default": "file",
            "sinks.dir": str(tmp_path / "out"),
            "worker.state_dir": str(tmp_path / "state"),
        },
    )
    return Worker(cfg)


def plan_url(worker, stream="StockStream"):
    return f"{worker.http_url}/events/-1234/StockAnalysis/{stream}"


def test_events_flow_in_over_http_and_zmq_and_results_reach_the_sink(
    fake_manager, registry_service, registry_client, tmp_path, helpers
):
    wait_for = helpers["wait_for"]
    fake_manager.set_plans([helpers["stock_entry"]()])
    spout = helpers["FakeSpout"](registry_client)
    w = make_worker(fake_manager, registry_service, tmp_path).start()
    try:
        assert wait_for(lambda: ("-1234/StockAnalysis") in w.status()["plans"])
        status, body = post(
            plan_url(w),
            [
                {"timestamp": 1, "data": ["IBM", 510.0, 10]},
                {"timestamp": 2, "data": ["IBM", "dear", 10]},
                ["WSO2", 60.0, 5],
            ],
        )
        assert status == 207 and (body["accepted"], body["rejected"]) == (2, 1)
        assert "'price'" in body["errors"][0]["reason"]
        client = ZmqEventClient(w.zmq_url)
        client.send(("-1234", "StockAnalysis", "StockStream"), [[3, ["ORCL", 1.5, 7]]])
        assert wait_for(lambda: spout.drain() == 3)
        assert [e[1][0] for e in spout.events] == ["IBM", "WSO2", "ORCL"]
        conns = registry_client.status(-1234, "StockAnalysis")["connections"]
        assert [(c["kind"], c["client"], c["stream"]) for c in conns] == [
            ("receiver", "w1", "StockStream")
        ]
        bolt = helpers["FakePublisherBolt"](registry_client)
        bolt.send("HighPriceStream", [[1, ["IBM", 510.0, 10]]])
        out = tmp_path / "out" / "-1234" / "StockAnalysis" / "HighPriceStream.jsonl"
        assert wait_for(lambda: out.exists() and out.read_text().count("\n") == 1)
        assert json.loads(out.read_text()) == {
            "stream": "HighPriceStream",
            "timestamp": 1,
            "data": ["IBM", 510.0, 10],
        }
        st = get(f"{w.http_url}/status")["plans"]["-1234/StockAnalysis"]
        assert st["inflow"]["connected"] == st["inflow"]["required"] == 1
        assert st["outflow"]["events"] == 1
        bolt.close()
        client.close()
    finally:
        w.stop()
        spout.close()


def test_removed_plan_is_torn_down_and_changed_plan_restarts(
    fake_manager, registry_service, registry_client, tmp_path, helpers
):
    wait_for = helpers["wait_for"]
    fake_manager.set_plans([helpers["stock_entry"](version=1)])
    w = make_worker(fake_manager, registry_service, tmp_path).start()
    try:
        assert wait_for(lambda: registry_client.status(-1234, "StockAnalysis")["publishers"])
        fake_manager.set_plans([helpers["stock_entry"](version=2)])
        assert wait_for(
            lambda: w.status()["plans"].get("-1234/StockAnalysis", {}).get("version") == 2
        )
        fake_manager.set_plans([])
        assert wait_for(lambda: not w.status()["plans"])
        assert wait_for(lambda: not registry_client.status(-1234, "StockAnalysis")["publishers"])
        status, body = post(plan_url(w), [["IBM", 1.0, 1]])
        assert status == 404 and "no stream -1234/StockAnalysis/StockStream" in body["error"]
    finally:
        w.stop()


def test_bad_sink_settings_fail_that_plan_only(fake_manager, registry_service, tmp_path, helpers):
    wait_for = helpers["wait_for"]
    bad = helpers["stock_entry"](name="Bad", sinks=[{"type": "nosuch", "options": {}}])
    fake_manager.set_plans([bad, helpers["stock_entry"]()])
    w = make_worker(fake_manager, registry_service, tmp_path).start()
    try:
        assert wait_for(lambda: "-1234/StockAnalysis" in w.status()["plans"])
        failed = w.status()["failed"]
        assert "unknown type 'nosuch'" in failed["-1234/Bad"]["error"]
    finally:
        w.stop()


@pytest.mark.slow
def test_worker_restart_reconnects_and_uses_whichever_manager_answers(
    fake_manager, registry_service, registry_client, tmp_path, helpers
):
    wait_for = helpers["wait_for"]
    fake_manager.set_plans([helpers["stock_entry"]()])
    spout = helpers["FakeSpout"](registry_client)
    managers = [dead_url(), fake_manager.url]
    w = make_worker(fake_manager, registry_service, tmp_path, managers=managers).start()
    assert wait_for(lambda: "-1234/StockAnalysis" in w.status()["plans"])
    post(plan_url(w), [["A", 1.0, 1]])
    assert wait_for(lambda: spout.drain() == 1)
    assert w.status()["sync"]["manager"] == fake_manager.url
    w.stop()
    assert wait_for(lambda: not registry_client.status(-1234, "StockAnalysis")["connections"])
    w2 = make_worker(fake_manager, registry_service, tmp_path, managers=managers).start()
    try:
        assert wait_for(lambda: "-1234/StockAnalysis" in w2.status()["plans"])
        post(plan_url(w2), [["B", 2.0, 2]])
        assert wait_for(lambda: spout.drain() == 2)
        assert [e[1][0] for e in spout.events] == ["A", "B"]
        assert wait_for(
            lambda: len(registry_client.status(-1234, "StockAnalysis")["connections"]) == 1
        )
    finally:
        w2.stop()
        spout.close()


def test_restarted_worker_rebinds_its_publisher_port_and_the_bolt_keeps_sending(
    fake_manager, registry_service, registry_client, tmp_path, helpers
):
    wait_for = helpers["wait_for"]
    fake_manager.set_plans([helpers["stock_entry"]()])
    w = make_worker(fake_manager, registry_service, tmp_path).start()
    # the publisher registers while the worker is still adding the plan to w.plans
    assert wait_for(
        lambda: (
            registry_client.status(-1234, "StockAnalysis")["publishers"]
            and (-1234, "StockAnalysis") in w.plans
        )
    )
    port = w.plans[(-1234, "StockAnalysis")].service.port
    bolt = helpers["FakePublisherBolt"](registry_client)
    bolt.send("HighPriceStream", [[1, ["A", 501.0, 1]]])
    out = tmp_path / "out" / "-1234" / "StockAnalysis" / "HighPriceStream.jsonl"
    assert wait_for(lambda: out.exists() and len(out.read_text().splitlines()) == 1)
    w.stop()
    bolt.send("HighPriceStream", [[2, ["B", 502.0, 2]]])  # sent while the worker is down
    w2 = make_worker(fake_manager, registry_service, tmp_path).start()
    try:
        assert wait_for(lambda: (-1234, "StockAnalysis") in w2.plans)
        assert w2.plans[(-1234, "StockAnalysis")].service.port == port
        assert wait_for(lambda: len(out.read_text().splitlines()) == 2)
        assert [json.loads(x)["timestamp"] for x in out.read_text().splitlines()] == [1, 2]
        conns = registry_client.status(-1234, "StockAnalysis")["connections"]
        assert [c["client"] for c in conns if c["kind"] == "publisher"] == ["bolt:0"]
    finally:
        bolt.close()
        w2.stop()


def test_port_book_survives_restarts_and_bad_files(tmp_path):
    from cep.worker.ports import PortBook

    book = PortBook(str(tmp_path), "host:9090")
    assert book.get("-1234/P") == 0
    book.put("-1234/P", 41001)
    assert PortBook(str(tmp_path), "host:9090").get("-1234/P") == 41001
    with open(book.path, "w") as fh:
        fh.write("{not json")
    assert PortBook(str(tmp_path), "host:9090").get("-1234/P") == 0


@pytest.mark.parametrize("roles", ["receiver", "publisher"])
def test_roles_limit_what_a_worker_serves(
    fake_manager, registry_service, registry_client, tmp_path, helpers, roles
):
    wait_for = helpers["wait_for"]
    fake_manager.set_plans([helpers["stock_entry"]()])
    spout = helpers["FakeSpout"](registry_client)
    w = make_worker(fake_manager, registry_service, tmp_path, **{"worker.roles": roles}).start()
    try:
        assert wait_for(lambda: "-1234/StockAnalysis" in w.status()["plans"])
        status, _ = post(plan_url(w), [["A", 1.0, 1]])
        publishers = registry_client.status(-1234, "StockAnalysis")["publishers"]
        if roles == "receiver":
            assert status == 200 and wait_for(lambda: spout.drain() == 1)
            assert publishers == []
        else:
            assert status == 404
            assert [p["worker"] for p in publishers] == ["w1"]
    finally:
        w.stop()
        spout.close()
