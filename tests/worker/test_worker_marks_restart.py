"""A worker *process* that acknowledged output frames is killed with SIGKILL and started again on
the same state dir; a stand-in publisher bolt (real ZeroMQ, the real registry, the plan's
token) then replays everything, as a publisher bolt does after its task is restored from a
checkpoint. With the duplicate marks on disk (`delivery.marks: fsync`, the default) the sink
holds every row once and the worker reports the replayed rows as duplicates; with the marks in
memory only (`off`, what a worker did before) the restarted worker writes them a second time
and cannot tell (it reports no duplicates). A worker killed while an HTTP sink was taking a
frame counts that frame's results as uncertain after its restart and writes that frame again,
and only that one. Also: a marks file the worker cannot open leaves the
plan running with its marks in memory, and a removed plan's file is deleted."""

import collections
import http.server
import json
import logging
import os
import re
import signal
import subprocess
import sys
import threading
import time

import pytest
import zmq

from cep.protocol.exceptions import ProtocolError
from cep.protocol.frames import encode_control, encode_output
from cep.security import curve
from publishers.service import numbered
from tests.auth_helpers import worker_open

CEP = os.path.join(os.path.dirname(sys.executable), "cep")
T, P, S = -1234, "StockAnalysis", "HighPriceStream"
PUB = f"{P}[{T}]:EventPublisherBolt:0"
LANE = f"w0/{T}/{P}/StockStream#0a1b2c3d|f:0"
FRAMES, ROWS = 20, 50  # acknowledged before the kill
NEW = 5  # frames after the replay


def start_worker(tmp_path, fake_manager, registry_service, marks, **env):
    """(process, base URL) of `cep worker` in the publisher role, once it serves the plan;
    its log goes to worker.log."""
    with open(tmp_path / "worker.log", "a") as log:  # the process keeps its own handle
        proc = _popen(tmp_path, fake_manager, registry_service, marks, log, env)
    base = re.search(
        r"http://127\.0\.0\.1:\d+", proc.stdout.readline() + proc.stdout.readline()
    ).group(0)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if outflow(base) is not None:
            return proc, base
        time.sleep(0.1)
    proc.kill()
    pytest.fail("the worker process never served the plan's publisher")


def _popen(tmp_path, fake_manager, registry_service, marks, log, env):
    return subprocess.Popen(
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
            "marks-w",
            "--http-port",
            "0",
            "--zmq-port",
            "-1",
            "--host",
            "127.0.0.1",
            "--advertised-host",
            "127.0.0.1",
            "--roles",
            "publisher",
        ],
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
        env={
            **os.environ,
            "CEP_WORKER_STATE_DIR": str(tmp_path / "state"),
            "CEP_SINKS_DEFAULT": "file",
            "CEP_SINKS_DIR": str(tmp_path / "out"),
            "CEP_DELIVERY_MARKS": marks,
            **env,
        },
    )


def outflow(base):
    try:
        with worker_open(f"{base}/status") as resp:
            plan = json.loads(resp.read())["plans"].get(f"{T}/{P}") or {}
    except (OSError, ValueError):
        return None
    return plan.get("outflow")


class StandInBolt:
    """What publishers/bolt.py does on the wire: a DEALER to the publisher the registry
    names, the plan's token, numbered messages, and the cumulative acknowledgements."""

    def __init__(self, registry):
        deadline = time.monotonic() + 30
        while True:
            try:
                endpoint = registry.lookup("publisher", T, P)["endpoint"]
                break
            except ProtocolError:
                assert time.monotonic() < deadline, "no publisher registered"
                time.sleep(0.1)
        self.sock = zmq.Context.instance().socket(zmq.DEALER)
        self.sock.setsockopt(zmq.LINGER, 0)
        curve.plain_client(self.sock, curve.plan_token(os.environ["CEP_CLUSTER_SECRET"], T, P))
        self.sock.connect(endpoint)
        self.number = self.acked = 0

    def send(self, frame):
        self.number += 1
        self.sock.send_multipart(numbered(self.number, frame))

    def wait_acked(self, timeout=60.0):
        deadline = time.monotonic() + timeout
        while self.acked < self.number:
            assert time.monotonic() < deadline, f"acknowledged {self.acked} of {self.number}"
            if self.sock.poll(200):
                self.acked = max(self.acked, int.from_bytes(self.sock.recv(), "little"))

    def close(self):
        self.sock.close(0)


def frame(k):
    """Output frame k: ROWS results numbered k*ROWS.. in one lane (volume = the number)."""
    first = k * ROWS
    rows = [[1_700_000_000_000 + i, ["IBM", 100.0, i]] for i in range(first, first + ROWS)]
    return encode_output(S, rows, PUB, 1, first, [(LANE, first, ROWS)])


def sink_rows(tmp_path):
    path = tmp_path / "out" / str(T) / P / f"{S}.jsonl"
    return [json.loads(line)["data"][2] for line in path.read_text().splitlines()]


@pytest.mark.parametrize("marks", ["fsync", pytest.param("off", marks=pytest.mark.slow)])
def test_a_restarted_worker_drops_the_replay_of_what_it_had_acknowledged(
    marks, fake_manager, registry_service, registry_client, tmp_path, helpers
):
    fake_manager.set_plans([helpers["stock_entry"]()])
    procs = []
    try:
        proc, base = start_worker(tmp_path, fake_manager, registry_service, marks)
        procs.append(proc)
        bolt = StandInBolt(registry_client)
        bolt.send(encode_control("start", PUB, None))  # the bolt's first start
        for k in range(FRAMES):
            bolt.send(frame(k))
        bolt.wait_acked()  # every frame is at the sink, and acknowledged
        bolt.close()
        assert sorted(sink_rows(tmp_path)) == list(range(FRAMES * ROWS))
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)

        proc, base = start_worker(tmp_path, fake_manager, registry_service, marks)
        procs.append(proc)
        bolt = StandInBolt(registry_client)  # the bolt's task restored from checkpoint 1
        bolt.send(encode_control("start", PUB, 1))
        for k in range(FRAMES + NEW):  # the replay, then new output
            bolt.send(frame(k))
        bolt.wait_acked()
        bolt.close()
        rows, status = sink_rows(tmp_path), outflow(base)
        replayed = FRAMES * ROWS
        if marks == "off":  # the worker forgot what it wrote: written twice, unnoticed
            assert status["duplicates"] == 0 and status["marks"] is None
            assert sorted(rows) == sorted(
                list(range(replayed)) * 2 + list(range(replayed, replayed + NEW * ROWS))
            )
        else:
            assert status["duplicates"] == replayed  # recognised and dropped
            assert status["marks"]["loaded"] == 1 and status["marks"]["uncertain"] == 0
            path = tmp_path / "state" / "marks-w" / "marks" / str(T) / f"{P}.marks"
            assert status["marks"]["path"] == str(path) and path.exists()
            text = worker_open(f"{base}/metrics").read().decode()
            assert re.search(r"cep_worker_publisher_marks_uncertain_total\{[^}]*\} 0\.0", text)
            assert sorted(rows) == list(range((FRAMES + NEW) * ROWS))  # each exactly once
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGKILL)
                p.wait(timeout=10)


def test_a_marks_file_that_cannot_be_opened_leaves_the_marks_in_memory(tmp_path, caplog):
    from cep.worker.plumbing import open_marks
    from publishers.delivery import Dedup

    (tmp_path / "marks").write_text("a file where the folder should be")
    dedup = Dedup()
    with caplog.at_level(logging.ERROR, logger="cep.worker.plumbing"):
        open_marks(dedup, str(tmp_path / "marks" / "-1234" / "P.marks"), "fsync")
    assert dedup.store is None and "cannot be used" in caplog.text
    assert "the marks stay in memory" in caplog.text


def test_a_removed_plans_marks_file_is_deleted_and_a_stopped_workers_kept(tmp_path):
    from cep.worker.plumbing import close_marks, open_marks
    from publishers.delivery import Dedup
    from publishers.fencing import Fences

    memory = {}
    for name in ("Kept", "Removed"):
        dedup = Dedup()
        open_marks(dedup, str(tmp_path / f"{name}.marks"), "fsync")
        memory[(T, name)] = (dedup, Fences())
    close_marks(memory, (T, "Removed"), remove=True)  # the manager removed the plan
    close_marks(memory)  # the worker stops
    assert not (tmp_path / "Removed.marks").exists() and (tmp_path / "Kept.marks").exists()
    assert all(dedup.store is None for dedup, _ in memory.values())


class HangingReceiver:
    """An HTTP endpoint for an HTTP sink: records the rows of every POST; once `hang` is set,
    the next POST is recorded and then not answered (the sink is inside its write when the
    worker is killed)."""

    def __init__(self):
        self.rows, self.hang = [], threading.Event()
        self.hung, self.release = threading.Event(), threading.Event()
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.rows.extend(e["data"][2] for e in json.loads(body))
                if receiver.hang.is_set():
                    receiver.hang.clear()
                    receiver.hung.set()
                    receiver.release.wait(60)
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_port}/"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


def test_the_frame_the_sinks_were_taking_when_the_worker_died_is_counted(
    fake_manager, registry_service, registry_client, tmp_path, helpers
):
    """The one window left: killed while a sink writes a frame (its marks not confirmed).
    The restarted worker counts those results as uncertain (/status, /metrics), and the
    replay writes that frame again, and only that frame."""
    receiver = HangingReceiver()
    sink = {"type": "http", "options": {"publisher.url": receiver.url, "timeout": "60"}}
    fake_manager.set_plans([helpers["stock_entry"](sinks=[sink])])
    allow = {"CEP_SINKS_HTTP_ALLOW": "127.0.0.1"}
    procs = []
    try:
        proc, base = start_worker(tmp_path, fake_manager, registry_service, "fsync", **allow)
        procs.append(proc)
        bolt = StandInBolt(registry_client)
        bolt.send(encode_control("start", PUB, None))
        for k in range(FRAMES):
            bolt.send(frame(k))
        bolt.wait_acked()
        receiver.hang.set()
        bolt.send(frame(FRAMES))  # the sink is writing it when the worker dies
        assert receiver.hung.wait(30), "the last frame never reached the HTTP endpoint"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        bolt.close()
        receiver.release.set()

        proc, base = start_worker(tmp_path, fake_manager, registry_service, "fsync", **allow)
        procs.append(proc)
        bolt = StandInBolt(registry_client)
        bolt.send(encode_control("start", PUB, 1))
        for k in range(FRAMES + 1):  # the replay
            bolt.send(frame(k))
        bolt.wait_acked()
        bolt.close()
        status = outflow(base)
        assert status["marks"]["uncertain"] == ROWS  # the frame the sink was writing
        assert status["duplicates"] == FRAMES * ROWS  # the acknowledged ones: dropped
        counts = collections.Counter(receiver.rows)
        last = range(FRAMES * ROWS, (FRAMES + 1) * ROWS)
        assert {n for n, c in counts.items() if c == 2} == set(last)  # that frame, twice
        assert sorted(counts) == list(range((FRAMES + 1) * ROWS))
        logged = (tmp_path / "worker.log").read_text()
        assert f"the worker stopped while its sinks took {ROWS} result(s) of {PUB}" in logged
        text = worker_open(f"{base}/metrics").read().decode()
        assert re.search(rf"cep_worker_publisher_marks_uncertain_total\{{[^}}]*\}} {ROWS}\.0", text)
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGKILL)
                p.wait(timeout=10)
        receiver.close()
