"""The pair in one process: two standalone Workers on real HTTP listeners that name each other
as peer (short intervals). Roles, output queues, forward and dual-send input, state sync of a
late passive, and the bad inputs: a peer that is not a worker, a peer with another plan
version, a wrong cluster secret, a Redis that goes away."""

import time

import pytest

from cep.worker.config import load_config
from cep.worker.node import Worker
from tests.worker.ha.conftest import (
    KEY,
    PLAN,
    events,
    expected_outputs,
    free_port,
    get_json,
    post,
    read_outputs,
    wait_for,
)

FAST = {"ha.sync_interval": 0.25, "ha.failover_s": 1.5}


def worker(tmp_path, name, port, peer_port, plan_file, **extra):
    out = tmp_path / name
    cfg = load_config(
        overrides={
            "worker.mode": "standalone",
            "standalone.plans": [str(plan_file)],
            "receivers.http_port": port,
            "receivers.zmq_port": -1,
            "ha.node_id": name,
            "ha.peer": f"http://127.0.0.1:{peer_port}",
            "sinks.default": "file",
            "sinks.dir": str(out / "sinks"),
            "worker.state_dir": str(out / "state"),
            "managers.poll_interval": 0.2,
            **FAST,
            **extra,
        },
        conf_dir=str(tmp_path / "noconf"),
    )
    return Worker(cfg).start()


def sink(tmp_path, name):
    return tmp_path / name / "sinks" / "-1234" / "HaPlan"


def outputs(tmp_path, name):
    out = {}
    for stream in ("Out", "Big"):
        out[stream] = read_outputs(sink(tmp_path, name) / f"{stream}.jsonl").get(stream, [])
    return out


@pytest.fixture
def pair(tmp_path, plan_file):
    made = []

    def make(forward=False, **extra):
        pa, pb = free_port(), free_port()
        a = worker(tmp_path, "a", pa, pb, plan_file, **{"ha.forward": forward, **extra})
        b = worker(tmp_path, "b", pb, pa, plan_file, **{"ha.forward": forward, **extra})
        made.extend([a, b])
        assert wait_for(
            lambda: (
                a.ha.role == "active"
                and b.ha.role == "passive"
                and KEY in b.ha.plans
                and not b.ha.plans[KEY].need_sync
            ),
            10,
        )
        return a, b

    yield make
    for w in made:
        w.stop()


def engine_state(w):
    return w.ha.plans[KEY].runtime.snapshot()


def test_dual_send_pair_active_publishes_passive_queues_and_trims(pair, tmp_path):
    a, b = pair()
    evs = events(0, 300)
    for i in range(0, 300, 50):
        assert post(a.http_url, evs[i : i + 50])[0] == 200
        assert post(b.http_url, evs[i : i + 50])[0] == 200
    want = expected_outputs(evs)
    assert wait_for(lambda: outputs(tmp_path, "a") == want)
    assert outputs(tmp_path, "b") == {"Out": [], "Big": []}  # the passive writes nothing
    assert wait_for(lambda: b.status()["ha"]["queue_events"] == 0)  # trimmed by the active
    hb = b.status()["ha"]
    assert hb["plans"][KEY]["seq"] == a.status()["ha"]["plans"][KEY]["published"]
    assert hb["peer"]["role"] == "active" and hb["last_sync"] is not None
    assert engine_state(a) == engine_state(b)
    import urllib.request

    with urllib.request.urlopen(f"{b.http_url}/metrics") as resp:
        text = resp.read().decode()
    wid = b.identity.worker_id
    assert f'cep_worker_ha_role{{role="passive",worker="{wid}"}} 1.0' in text
    assert f'cep_worker_ha_role{{role="active",worker="{wid}"}} 0.0' in text
    assert f'cep_worker_ha_queue_events{{plan="HaPlan",tenant="-1234",worker="{wid}"}} 0.0' in text
    assert "cep_worker_ha_duplicates_total" in text
    age = [
        line
        for line in text.splitlines()
        if line.startswith("cep_worker_ha_last_sync_age_seconds{")
    ]
    assert len(age) == 1 and 0 <= float(age[0].split()[-1]) < 5


def test_forward_pair_the_passive_gets_every_batch_and_refuses_clients(pair, tmp_path):
    a, b = pair(forward=True)
    evs = events(0, 400)
    for i in range(0, 400, 40):
        assert post(a.http_url, evs[i : i + 40])[0] == 200
    code, body = post(b.http_url, evs[:5])
    assert code == 503 and "passive" in body["error"] and body["retry"] is True
    assert outputs(tmp_path, "a") == expected_outputs(evs)
    plan_b = b.ha.plans[KEY]
    assert plan_b.in_seq == a.ha.plans[KEY].in_seq == 10  # acked before 200
    assert engine_state(a) == engine_state(b)
    assert a.status()["ha"]["forwarder"]["sent_events"] == 400


def test_a_passive_that_starts_late_syncs_the_live_state(tmp_path, plan_file):
    pa, pb = free_port(), free_port()
    a = worker(tmp_path, "a", pa, pb, plan_file, **{"ha.forward": True})
    b = None
    try:
        assert wait_for(lambda: a.ha.role == "active", 60)  # no peer: active alone
        first = events(0, 500)
        for i in range(0, 500, 100):
            assert post(a.http_url, first[i : i + 100])[0] == 200
        b = worker(tmp_path, "b", pb, pa, plan_file, **{"ha.forward": True})
        assert wait_for(
            lambda: (
                b.ha.role == "passive"
                and KEY in b.ha.plans
                and b.status()["ha"]["plans"][KEY]["sync"]["state"] == "done"
            ),
            10,
        )
        sync = b.status()["ha"]["plans"][KEY]["sync"]
        assert sync["bytes"] > 0 and sync["in_seq"] == 5
        assert engine_state(a) == engine_state(b)
        more = events(500, 200)
        for i in range(0, 200, 50):
            assert post(a.http_url, more[i : i + 50])[0] == 200
        assert engine_state(a) == engine_state(b)
        assert b.status()["ha"]["plans"][KEY]["seq"] == a.status()["ha"]["plans"][KEY]["seq"]
    finally:
        for w in (a, b):
            if w is not None:
                w.stop()


def test_a_peer_that_is_not_a_worker_gives_a_clear_error_and_the_node_goes_on(tmp_path, plan_file):
    from flask import Flask
    from receivers.http_receiver import HttpServer

    other = HttpServer(Flask("not-a-worker"), "127.0.0.1", 0).start()  # 404 for everything
    a = worker(tmp_path, "a", free_port(), other.port, plan_file)
    try:
        assert wait_for(lambda: a.ha.role == "active", 60)
        peer = a.status()["ha"]["peer"]
        assert "is not a CEP worker with HA (HTTP 404 on /ha/heartbeat)" in peer["error"]
        evs = events(0, 100)
        assert post(a.http_url, evs)[0] == 200
        assert wait_for(lambda: outputs(tmp_path, "a") == expected_outputs(evs))
        assert all(t["state"] == "running" for t in a.status()["threads"])
    finally:
        a.stop()
        other.stop()


def test_a_peer_with_another_plan_version_is_not_synced_and_the_active_publishes(
    tmp_path, plan_file
):
    other_plan = tmp_path / "other" / "ha-plan.siddhiql"
    other_plan.parent.mkdir()
    other_plan.write_text(PLAN.replace("v > 90", "v > 50"))
    pa, pb = free_port(), free_port()
    a = worker(tmp_path, "a", pa, pb, plan_file)
    b = worker(tmp_path, "b", pb, pa, other_plan)
    try:
        assert wait_for(lambda: a.ha.role == "active" and b.ha.plan_errors.get(KEY), 60)
        assert "runs another version" in b.status()["ha"]["plan_errors"][KEY]
        assert "runs another version" in a.status()["ha"]["plan_errors"][KEY]
        assert b.status()["ha"]["plans"][KEY]["sync"]["state"] == "none"  # never synced
        evs = events(0, 100)
        assert post(a.http_url, evs)[0] == 200
        assert wait_for(lambda: outputs(tmp_path, "a") == expected_outputs(evs))
    finally:
        a.stop()
        b.stop()


def test_peer_calls_need_the_cluster_secret(tmp_path, plan_file):
    wrong = tmp_path / "wrong-secret"
    wrong.write_text("not-the-pair-secret\n")
    pa, pb = free_port(), free_port()
    a = worker(tmp_path, "a", pa, pb, plan_file)
    b = worker(tmp_path, "b", pb, pa, plan_file, **{"managers.cluster_secret_file": str(wrong)})
    try:
        assert wait_for(
            lambda: (
                "refused our cluster secret (HTTP 401" in (b.status()["ha"]["peer"]["error"] or "")
            ),
            5,
        )
        code, body = get_json(f"{a.http_url}/ha/status")
        assert code == 401 and "cluster secret" in body["error"]
        code, _ = get_json(f"{a.http_url}/ha/snapshot/-1234/HaPlan?digest=x", "bad")
        assert code == 401
    finally:
        a.stop()
        b.stop()


def test_redis_lease_decides_and_a_redis_that_goes_away_keeps_the_active(pair, tmp_path, own_redis):
    proc, url, client = own_redis
    a, b = pair(**{"ha.redis_url": url, "ha.lease_key": "cep:ha:test"})
    assert client.get("cep:ha:test") == b"a"
    assert a.status()["ha"]["lease"]["held"] is True
    proc.kill()
    proc.wait()
    assert wait_for(lambda: "Redis lease at" in (a.status()["ha"]["lease"]["last_error"] or ""), 60)
    time.sleep(2.0)  # longer than ha.failover_s: still one active, the same
    assert a.ha.role == "active" and b.ha.role == "passive"
    evs = events(0, 100)
    assert post(a.http_url, evs)[0] == 200 and post(b.http_url, evs)[0] == 200
    assert wait_for(lambda: outputs(tmp_path, "a") == expected_outputs(evs))
    assert all(t["state"] == "running" for t in a.status()["threads"])


def test_a_graceful_stop_hands_over_at_once_without_duplicates(tmp_path, plan_file):
    pa, pb = free_port(), free_port()
    extra = {"ha.failover_s": 5.0}  # the hand-over must not wait for it
    a = worker(tmp_path, "a", pa, pb, plan_file, **extra)
    b = worker(tmp_path, "b", pb, pa, plan_file, **extra)
    try:
        assert wait_for(
            lambda: (
                a.ha.role == "active"
                and b.ha.role == "passive"
                and KEY in b.ha.plans
                and not b.ha.plans[KEY].need_sync
            ),
            10,
        )
        first = events(0, 200)
        assert post(a.http_url, first)[0] == 200 and post(b.http_url, first)[0] == 200
        t0 = time.monotonic()
        a.stop()
        assert wait_for(lambda: b.ha.role == "active", 30)
        print(f"hand-over after {time.monotonic() - t0:.2f} s")
        # taken over because a said it stopped, not after ha.failover_s without a heartbeat
        assert "stopped and handed over" in b.ha.history[-1]["why"], b.ha.history
        second = events(200, 100)
        assert post(b.http_url, second)[0] == 200
        got = {s: outputs(tmp_path, "a")[s] + outputs(tmp_path, "b")[s] for s in ("Out", "Big")}
        assert got == expected_outputs(first + second)  # all of them, none twice
        assert b.status()["ha"]["duplicates"] == 0
    finally:
        a.stop()
        b.stop()


def test_bad_heartbeats_and_forwarded_input_get_a_400_and_the_node_goes_on(pair):
    import json
    import urllib.error
    import urllib.request

    from cep.security import cluster_secret

    a, b = pair()
    secret = a.ha.client.secret

    def call(path, data, ctype="application/json"):
        req = urllib.request.Request(
            f"{a.http_url}{path}",
            data=data,
            method="POST",
            headers={cluster_secret.HEADER: secret, "Content-Type": ctype},
        )
        try:
            with urllib.request.urlopen(req, timeout=3) as resp:
                return resp.status, json.loads(resp.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read())

    for bad in (
        b"[]",
        b"not json",
        json.dumps({"protocol": 1, "node": "x", "role": "boss", "epoch": 0, "plans": {}}).encode(),
        json.dumps(
            {"protocol": 1, "node": "x", "role": "active", "epoch": "1", "plans": {}}
        ).encode(),
    ):
        code, body = call("/ha/heartbeat", bad)
        assert code == 400 and "heartbeat" in body["error"] and "Traceback" not in str(body)
    code, body = call("/ha/input", b"\xc1 not msgpack", "application/msgpack")
    assert code == 400 and "forwarded input" in body["error"]
    assert a.ha.role == "active" and b.ha.role == "passive"
    assert all(t["state"] == "running" for t in a.status()["threads"])


def test_events_taken_while_the_role_is_open_are_held_and_written_once_active(tmp_path, plan_file):
    a = worker(
        tmp_path,
        "a",
        free_port(),
        free_port(),
        plan_file,  # no peer: alone after 15 s (long enough for a loaded machine to post)
        **{"ha.failover_s": 15.0},
    )
    try:
        assert wait_for(lambda: KEY in a.ha.plans, 30) and a.ha.role == "starting"
        evs = events(0, 300)
        assert post(a.http_url, evs)[0] == 200
        assert a.status()["ha"]["plans"][KEY]["held_events"] == 300, a.ha.role
        assert wait_for(lambda: a.ha.role == "active", 60)
        assert wait_for(lambda: outputs(tmp_path, "a") == expected_outputs(evs), 60)
        assert a.status()["ha"]["plans"][KEY]["held_events"] == 0
    finally:
        a.stop()


def test_dual_send_a_passive_that_starts_mid_stream_ends_with_the_actives_state(
    tmp_path, plan_file
):
    import threading

    pa, pb = free_port(), free_port()
    a = worker(tmp_path, "a", pa, pb, plan_file)
    nodes, b = [a], None
    try:
        assert wait_for(lambda: a.ha.role == "active", 60)
        evs = events(0, 6000)

        def feed():  # one ordered sender: each batch to every node that is up
            for i in range(0, len(evs), 50):
                for w in list(nodes):
                    post(w.http_url, evs[i : i + 50])
                time.sleep(0.005)

        sender = threading.Thread(target=feed)
        sender.start()
        time.sleep(0.3)
        b = worker(tmp_path, "b", pb, pa, plan_file)
        nodes.append(b)  # the client sends to b from now on, the stream goes on
        sender.join(60)
        assert wait_for(
            lambda: (
                b.ha.role == "passive"
                and KEY in b.ha.plans
                and b.status()["ha"]["plans"][KEY]["sync"]["state"] == "done"
            ),
            10,
        )
        synced_at = b.status()["ha"]["plans"][KEY]["sync"]["in_seq"]
        assert 0 < synced_at < len(evs) // 50  # the state came while the stream ran
        assert wait_for(lambda: engine_state(a) == engine_state(b), 60)
        assert b.status()["ha"]["plans"][KEY]["seq"] == a.status()["ha"]["plans"][KEY]["seq"]
        assert outputs(tmp_path, "a") == expected_outputs(evs)
    finally:
        for w in (a, b):
            if w is not None:
                w.stop()
