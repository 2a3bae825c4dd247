"""The write-ahead log at a real distributed worker (registry service, stand-in manager REST,
real sockets): frames carry offsets, replay re-sends in order before new events, a real
receiver spout keeps each offset once and in order, commit deletes segments, caps give 503
with the reason and hold ZeroMQ frames, and nothing answered 200 is missing from the log after
SIGKILL."""

import json
import os
import re
import signal
import subprocess
import sys
import urllib.error
import urllib.request

import pytest
import zmq

from cep.worker.config import load_config
from cep.worker.node import Worker
from cep.protocol.frames import decode_logged_batch
from receivers.spout import ReceiverSpout
from receivers.wal import WriteAheadLog
from receivers.zmq_receiver import ZmqEventClient
from topology.component import Collector, Context
from tests.auth_helpers import worker_open

CEP = os.path.join(os.path.dirname(sys.executable), "cep")
T, P, S = -1234, "StockAnalysis", "StockStream"
KEY = ("-1234", P, S)


def post(url, body, timeout=10):
    headers = {"Content-Type": "application/json"}
    if os.environ.get("CEP_CLUSTER_SECRET"):  # what the worker's wal API asks of callers
        headers["X-CEP-Cluster-Secret"] = os.environ["CEP_CLUSTER_SECRET"]
    req = urllib.request.Request(
        url, data=json.dumps(body).encode(), method="POST", headers=headers
    )
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, json.loads(resp.read()), resp.headers
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read()), exc.headers


def events(lo, hi):
    """Counted events: the volume is the sequence number."""
    return [{"timestamp": 1_700_000_000_000 + i, "data": ["IBM", 1.5, i]} for i in range(lo, hi)]


def worker_cfg(fake_manager, registry_service, tmp_path, **extra):
    return load_config(
        path=tmp_path / "none.yaml",
        env={},
        overrides={
            "worker.id": "w1",
            "worker.mode": "distributed",
            "worker.advertised_host": "127.0.0.1",
            "managers.urls": [fake_manager.url],
            "managers.registries": [f"tcp://127.0.0.1:{registry_service.port}"],
            "managers.poll_interval": 0.2,
            "managers.timeout": 1.0,
            "receivers.http_host": "127.0.0.1",
            "receivers.http_port": 0,
            "receivers.zmq_host": "127.0.0.1",
            "receivers.zmq_port": 0,
            "transport.reconnect_interval": 0.1,
            "transport.heartbeat_interval": 0.5,
            "worker.state_dir": str(tmp_path / "state"),
            **extra,
        },
    )


@pytest.fixture
def worker_factory(fake_manager, registry_service, tmp_path, helpers):
    fake_manager.set_plans([helpers["stock_entry"]()])
    started = []

    def make(**extra):
        w = Worker(worker_cfg(fake_manager, registry_service, tmp_path, **extra)).start()
        started.append(w)
        assert helpers["wait_for"](lambda: f"{T}/{P}" in w.status()["plans"])
        return w

    yield make
    for w in started:
        w.stop()


class RawSpout:
    """A PULL socket registered as the receiver spout; keeps the decoded frames."""

    def __init__(self, registry):
        self.sock = zmq.Context.instance().socket(zmq.PULL)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.port = self.sock.bind_to_random_port("tcp://127.0.0.1")
        registry.register("receiver", T, P, "127.0.0.1", self.port, streams=[S])
        self.frames = []

    def drain(self):
        while self.sock.poll(50):
            stream, evs, pos = decode_logged_batch(self.sock.recv())
            self.frames.append((pos, [e[1][2] for e in evs]))
        return sum(len(f[1]) for f in self.frames)

    def close(self):
        self.sock.close(0)


def inflow(w):
    return w.plans[(T, P)].inflows[S]


def url(w, op):
    return f"{w.http_url}/wal/{T}/{P}/{S}/{op}"


def test_frames_carry_offsets_and_replay_resends_in_order_before_new_events(
    worker_factory, registry_client, helpers
):
    spout = RawSpout(registry_client)
    w = worker_factory()
    try:
        assert post(f"{w.http_url}/events/{T}/{P}/{S}", events(0, 1000))[0] == 200
        assert helpers["wait_for"](lambda: spout.drain() == 1000)
        rid = inflow(w).receiver_id
        assert rid.startswith(f"w1/{T}/{P}/{S}#")
        flat = [
            (pos.receiver_id, pos.first_offset + i, seq)
            for pos, seqs in spout.frames
            for i, seq in enumerate(seqs)
        ]
        assert all(r == rid and off == seq for r, off, seq in flat)  # offset i holds event i
        assert all(pos.control == w.http_url for pos, _ in spout.frames)
        status, body, _ = post(url(w, "replay"), {"receiver_id": rid, "after": 599})
        assert status == 200 and (body["first"], body["end"], body["events"]) == (600, 1000, 400)
        assert post(f"{w.http_url}/events/{T}/{P}/{S}", events(1000, 1100))[0] == 200
        assert helpers["wait_for"](lambda: spout.drain() == 1500)
        seqs = [s for _, f in spout.frames for s in f][1000:]
        assert seqs == list(range(600, 1000)) + list(range(1000, 1100))
        assert inflow(w).metrics()["replayed"] == 400
    finally:
        spout.close()


@pytest.mark.parametrize("mode", ["fsync", "os", "none"])
def test_each_durability_mode_logs_and_delivers_every_event(
    worker_factory, registry_client, helpers, mode
):
    spout = RawSpout(registry_client)
    w = worker_factory(**{"wal.durability": mode})
    try:
        for lo in range(0, 2000, 500):
            assert post(f"{w.http_url}/events/{T}/{P}/{S}", events(lo, lo + 500))[0] == 200
        assert helpers["wait_for"](lambda: spout.drain() == 2000)
        assert [s for _, f in spout.frames for s in f] == list(range(2000))
        wal = inflow(w).wal
        assert wal.metrics()["durability"] == mode
        assert [e[1][2] for _, evs in wal.read() for e in evs] == list(range(2000))
    finally:
        spout.close()


def test_a_restarted_worker_resends_what_it_had_not_sent(worker_factory, registry_client, helpers):
    w = worker_factory()  # no spout yet: 300 events stay buffered, logged
    assert post(f"{w.http_url}/events/{T}/{P}/{S}", events(0, 300))[0] == 200
    w.stop()
    spout = RawSpout(registry_client)
    try:
        again = worker_factory()
        assert post(f"{again.http_url}/events/{T}/{P}/{S}", events(300, 400))[0] == 200
        assert helpers["wait_for"](lambda: spout.drain() >= 400)
        assert [s for _, f in spout.frames for s in f] == list(range(400))
        again.stop()  # the sent mark is saved: the next restart re-sends nothing
        third = worker_factory()
        assert post(f"{third.http_url}/events/{T}/{P}/{S}", events(400, 410))[0] == 200
        assert helpers["wait_for"](lambda: spout.drain() >= 410)
        assert [s for _, f in spout.frames for s in f] == list(range(410))
    finally:
        spout.close()


def test_commit_deletes_covered_segments_and_shows_in_status_and_metrics(
    worker_factory, registry_client, helpers
):
    spout = RawSpout(registry_client)
    w = worker_factory(**{"wal.segment_bytes": 8192})
    try:
        for lo in range(0, 3000, 500):
            assert post(f"{w.http_url}/events/{T}/{P}/{S}", events(lo, lo + 500))[0] == 200
        assert helpers["wait_for"](lambda: spout.drain() == 3000)
        wal = inflow(w).metrics()["wal"]
        assert wal["appended_offset"] == 2999 and wal["segments"] > 3
        rid = inflow(w).receiver_id
        status, body, _ = post(url(w, "commit"), {"receiver_id": rid, "offset": 2499})
        assert status == 200 and body["deleted_segments"] > 0
        left = json.load(worker_open(f"{w.http_url}/status"))
        m = left["plans"][f"{T}/{P}"]["inflow"]["streams"][0]["wal"]
        assert m["committed_offset"] == 2499 and m["segments"] < wal["segments"]
        text = worker_open(f"{w.http_url}/metrics").read().decode()
        assert re.search(r'cep_worker_wal_committed_offset\{.*stream="StockStream".*\} 2499', text)
        assert "cep_worker_wal_oldest_uncommitted_age_seconds" in text
        assert post(url(w, "commit"), {"receiver_id": "someone-else", "offset": 1})[0] == 404
        assert post(url(w, "replay"), {"receiver_id": rid})[0] == 400
    finally:
        spout.close()


def test_caps_give_503_with_the_reason_and_hold_zeromq_frames(worker_factory, helpers):
    w = worker_factory(**{"wal.max_bytes": 4000})  # no spout: nothing is committed
    assert post(f"{w.http_url}/events/{T}/{P}/{S}", events(0, 200))[0] == 200
    status, body, headers = post(f"{w.http_url}/events/{T}/{P}/{S}", events(200, 210))
    assert status == 503 and body["reason"] == "backpressure" and body["retry"] is True
    assert "wal.max_bytes" in body["error"] and "nothing was lost" in body["error"]
    assert headers["Retry-After"] == "1" and "/" + "tmp" not in body["error"]
    client = ZmqEventClient(w.zmq_url)
    client.send(KEY, [[1, ["IBM", 1.0, 1]]])
    assert helpers["wait_for"](lambda: w.status()["receivers"]["zmq_wal_waits"] >= 2)
    assert w.status()["receivers"]["zmq_bad_messages"] == 0  # held, not dropped
    client.close()
    assert inflow(w).metrics()["wal"]["full_refusals"] >= 2


def open_spout(registry_service):
    spout = ReceiverSpout(
        {
            "registry": f"tcp://127.0.0.1:{registry_service.port}",
            "tenant": T,
            "plan": P,
            "streams": {S: ["symbol", "price", "volume"]},
            "host": "127.0.0.1",
            "tick_ms": 0,
        }
    )
    out = {S: ["ts", "symbol", "price", "volume"]}
    collector = Collector("EventReceiverSpout", out)
    spout.open(Context(f"{P}[{T}]", "EventReceiverSpout", 0, 1, 0, out), collector)
    return spout, collector


def pump(spout, collector, got):
    spout.next_batch()
    got.extend(row[3] for _, rows, _ in collector.take() for row in rows)
    return len(got)


def test_real_spout_records_offsets_and_a_restored_spout_gets_the_gap_replayed(
    worker_factory, registry_service, helpers
):
    spout, collector = open_spout(registry_service)
    got = []
    try:
        w = worker_factory()
        assert post(f"{w.http_url}/events/{T}/{P}/{S}", events(0, 800))[0] == 200
        assert helpers["wait_for"](lambda: pump(spout, collector, got) >= 800)
        rid = inflow(w).receiver_id
        assert got == list(range(800)) and spout.offsets() == {rid: 799}
        state = spout.snapshot()
        assert state["offsets"] == {rid: 799} and state["control"] == {rid: w.http_url}
        # a spout restored from an older checkpoint: offsets after 299 come again, in order
        spout.restore({"offsets": {rid: 299}, "control": state["control"]})
        answers = spout.request_replay()
        assert answers[rid]["events"] == 500
        got.clear()
        assert helpers["wait_for"](lambda: pump(spout, collector, got) >= 500)
        assert got == list(range(300, 800))
        # a gap (the spout restored at 699 sees offset 800 next): dropped, then replayed
        spout.restore({"offsets": {rid: 699}})
        got.clear()
        assert post(f"{w.http_url}/events/{T}/{P}/{S}", events(800, 900))[0] == 200
        assert helpers["wait_for"](lambda: pump(spout, collector, got) >= 200)
        assert got == list(range(700, 900)) and spout.offsets() == {rid: 899}
        assert spout.wal_offsets.gap_drops >= 100
        answers = spout.commit({rid: 799}, wait=True)
        assert answers[rid]["committed_offset"] == 799
        assert spout.commit({rid: 899}) is None  # the default: sent in the background
        assert helpers["wait_for"](lambda: inflow(w).wal.committed == 899)
    finally:
        spout.close()


def test_replay_overlapping_emitted_offsets_is_deduplicated_at_the_spout(
    worker_factory, registry_service, helpers
):
    spout, collector = open_spout(registry_service)
    got = []
    try:
        w = worker_factory()
        assert post(f"{w.http_url}/events/{T}/{P}/{S}", events(0, 500))[0] == 200
        assert helpers["wait_for"](lambda: pump(spout, collector, got) >= 500)
        rid = inflow(w).receiver_id
        assert post(url(w, "replay"), {"receiver_id": rid, "after": 99})[0] == 200
        assert post(f"{w.http_url}/events/{T}/{P}/{S}", events(500, 600))[0] == 200
        assert helpers["wait_for"](lambda: pump(spout, collector, got) >= 600)
        assert got == list(range(600)) and spout.wal_offsets.duplicates == 400
    finally:
        spout.close()


def served(base):
    with worker_open(f"{base}/events") as resp:  # the stream list needs the cluster secret
        return f"{T}/{P}/{S}" in json.loads(resp.read())["streams"]


@pytest.mark.slow
def test_sigkill_after_200_keeps_every_accepted_event_in_the_log(
    fake_manager, registry_service, registry_client, tmp_path, helpers
):
    """A worker process answers 200 for N events (no spout: they stay buffered), is killed with
    SIGKILL, and its log holds all N; restarted, it goes on from offset N and re-sends them."""
    fake_manager.set_plans([helpers["stock_entry"]()])
    state = tmp_path / "state"

    def start():
        proc = subprocess.Popen(
            [
                CEP,
                "worker",
                "--config",
                str(tmp_path / "none.yaml"),
                "--manager",
                fake_manager.url,
                "--registry",
                f"tcp://127.0.0.1:{registry_service.port}",
                "--id",
                "kill-w",
                "--http-port",
                "0",
                "--zmq-port",
                "-1",
                "--host",
                "127.0.0.1",
                "--advertised-host",
                "127.0.0.1",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env={**os.environ, "CEP_WORKER_STATE_DIR": str(state)},
        )
        line = proc.stdout.readline()
        base = re.search(r"http://127\.0\.0\.1:\d+", line + proc.stdout.readline()).group(0)
        return proc, base

    proc, base = start()
    n = 0
    try:
        assert helpers["wait_for"](lambda: served(base), 20)
        for lo in range(0, 20000, 1000):
            status, body, _ = post(f"{base}/events/{T}/{P}/{S}", events(lo, lo + 1000))
            assert status == 200 and body["accepted"] == 1000
            n += body["accepted"]
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        directory = next(p for p, _, files in os.walk(state) if "log-id" in files)
        assert directory.startswith(str(state / "kill-w" / "wal"))  # <state dir>/<worker id>
        wal = WriteAheadLog(directory).open()
        seqs = [e[1][2] for _, evs in wal.read() for e in evs]
        wal.close()
        assert seqs == list(range(n))
        proc, base = start()
        spout = RawSpout(registry_client)
        try:
            assert helpers["wait_for"](lambda: served(base), 20)
            assert post(f"{base}/events/{T}/{P}/{S}", events(n, n + 10))[0] == 200
            body = json.load(worker_open(f"{base}/status"))
            stream = body["plans"][f"{T}/{P}"]["inflow"]["streams"][0]
            assert stream["wal"]["appended_offset"] == n + 9  # offsets never reused
            # none was sent before the kill: the restarted worker re-sends them by itself,
            # ahead of the new events
            assert helpers["wait_for"](lambda: spout.drain() >= n + 10, 20)
            assert [s for _, f in spout.frames for s in f] == list(range(n + 10))
            assert stream["replayed"] == n
        finally:
            spout.close()
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=10)


def test_a_plan_that_fails_to_build_releases_its_logs(worker_factory, fake_manager, helpers):
    """A version whose sink the host policy refuses fails after its logs were opened; the
    next version opens the same logs (they are not left locked)."""
    bad = helpers["stock_entry"](
        version=2, sinks=[{"type": "redis", "options": {"connection": "nowhere"}}]
    )
    w = worker_factory()
    fake_manager.set_plans([bad])
    assert helpers["wait_for"](lambda: f"{T}/{P}" in w.status()["failed"])
    assert "nowhere" in w.status()["failed"][f"{T}/{P}"]["error"]
    fake_manager.set_plans([helpers["stock_entry"](version=3)])
    assert helpers["wait_for"](lambda: w.status()["plans"].get(f"{T}/{P}", {}).get("version") == 3)
    assert post(f"{w.http_url}/events/{T}/{P}/{S}", events(0, 10))[0] == 200
