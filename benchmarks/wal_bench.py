"""Write-ahead log benchmark: append throughput per durability mode, and the worker's
HTTP receiver with the log on (durability os) vs off, alternating in the same run.

  append   WriteAheadLog.append of 1,000-event batches into a temp dir: events/s per mode
           (fsync, os, none), one writer thread and 4 writer threads (group commit shares
           one write/fdatasync among the threads waiting)
  http     a distributed worker (real registry, a stand-in manager REST, a PULL socket standing
           in for the receiver spout, drained by a thread), JSON POSTs of 1,000 events from
           2 keep-alive client threads until every event reached the spout: events/s, with
           wal.enabled on (os) and off

    .venv/bin/python benchmarks/wal_bench.py --runs 3
    .venv/bin/python benchmarks/wal_bench.py --stage append --events 2000000
"""

import argparse
import http.client
import json
import logging
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time

import zmq

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from manager.registry.service import RegistryService  # noqa: E402
from cep.protocol.frames import decode_batch  # noqa: E402
from receivers.wal import DURABILITY_MODES, WriteAheadLog  # noqa: E402

TENANT, PLAN, STREAM = -1234, "WalBench", "StockStream"
ATTRS = [["symbol", "string"], ["price", "double"], ["volume", "long"]]


def batch(start, size=1000, t0=1_700_000_000_000):
    return [[t0 + i, ["IBM", float(i % 1000), i]] for i in range(start, start + size)]


def run_append(mode, n, threads):
    """Events/s of `threads` threads appending n events in 1,000-event batches."""
    root = tempfile.mkdtemp(prefix="walbench-")
    wal = WriteAheadLog(os.path.join(root, "log"), durability=mode).open()
    data = batch(0)
    per = n // threads // 1000

    def writer():
        for _ in range(per):
            wal.append(data)

    workers = [threading.Thread(target=writer) for _ in range(threads)]
    t0 = time.perf_counter()
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    elapsed = time.perf_counter() - t0
    wal.close()
    shutil.rmtree(root)
    return per * threads * 1000 / elapsed


class FakeManager:
    """GET /api/v1/deployments serving the one bench plan."""

    def __init__(self):
        from flask import Flask, jsonify
        from receivers.http_receiver import HttpServer

        app = Flask("bench-manager")
        plan = {
            "tenant": TENANT,
            "name": PLAN,
            "version": 1,
            "imported": [{"stream": STREAM, "attributes": ATTRS, "sources": []}],
            "exported": [],
        }
        app.get("/api/v1/deployments")(lambda: jsonify({"version": 1, "plans": [plan]}))
        self.server = HttpServer(app, "127.0.0.1", 0).start()


class Spout(threading.Thread):
    """A PULL socket registered as the receiver spout, counting the events it takes."""

    def __init__(self, registry_port):
        super().__init__(daemon=True)
        from cep.protocol.registry_client import RegistryClient

        self.sock = zmq.Context.instance().socket(zmq.PULL)
        self.sock.setsockopt(zmq.LINGER, 0)
        port = self.sock.bind_to_random_port("tcp://127.0.0.1")
        self.client = RegistryClient(f"tcp://127.0.0.1:{registry_port}")
        self.client.register("receiver", TENANT, PLAN, "127.0.0.1", port, streams=[STREAM])
        self.got, self.stop = 0, threading.Event()

    def run(self):
        while not self.stop.is_set():
            if self.sock.poll(100):
                self.got += len(decode_batch(self.sock.recv())[1])


def run_http(n, wal_on, reg, manager, root):
    from cep.worker.config import load_config
    from cep.worker.node import Worker

    spout = Spout(reg.port)
    spout.start()
    cfg = load_config(
        path=os.path.join(root, "none.yaml"),
        env={},
        overrides={
            "worker.id": f"bench-{wal_on}",
            "worker.mode": "distributed",
            "managers.urls": [manager.server.url],
            "managers.registries": [f"tcp://127.0.0.1:{reg.port}"],
            "managers.poll_interval": 0.2,
            "receivers.http_port": 0,
            "receivers.zmq_port": -1,
            "wal.enabled": wal_on,
            "wal.durability": "os",
            "worker.state_dir": tempfile.mkdtemp(dir=root),
        },
    )
    worker = Worker(cfg).start()
    try:
        while (
            not worker.status()["plans"]
            .get(f"{TENANT}/{PLAN}", {})
            .get("inflow", {})
            .get("connected")
        ):
            time.sleep(0.05)
        body = json.dumps([{"timestamp": e[0], "data": e[1]} for e in batch(0)]).encode()
        per = n // 2 // 1000
        t0 = time.perf_counter()
        clients = [
            threading.Thread(target=_post_loop, args=(worker.http.port, body, per))
            for _ in range(2)
        ]
        for c in clients:
            c.start()
        for c in clients:
            c.join()
        while spout.got < per * 2000:
            time.sleep(0.002)
        return per * 2000 / (time.perf_counter() - t0)
    finally:
        worker.stop()
        spout.stop.set()
        spout.join()
        spout.client.close()
        spout.sock.close(0)


def _post_loop(port, body, count):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    for _ in range(count):
        conn.request(
            "POST", f"/events/{TENANT}/{PLAN}/{STREAM}", body, {"Content-Type": "application/json"}
        )
        resp = conn.getresponse()
        resp.read()
        if resp.status != 200:
            raise RuntimeError(f"HTTP {resp.status}")
    conn.close()


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--stage", choices=("all", "append", "http"), default="all")
    p.add_argument("--events", type=int, default=1_000_000, help="events per append run")
    p.add_argument("--http-events", type=int, default=200_000, help="events per HTTP run")
    p.add_argument("--runs", type=int, default=3)
    a = p.parse_args(argv)
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    print(f"load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}, cpus {os.cpu_count()}")
    if a.stage in ("all", "append"):
        for threads in (1, 4):
            for mode in DURABILITY_MODES:
                runs = [run_append(mode, a.events, threads) for _ in range(a.runs)]
                print(
                    f"append {mode:5} {threads} thread(s): median {statistics.median(runs):,.0f} "
                    f"events/s  runs {[round(r) for r in runs]}"
                )
    if a.stage in ("all", "http"):
        root = tempfile.mkdtemp(prefix="walbench-http-")
        reg = RegistryService(port=0, bind_host="127.0.0.1")
        reg.start()
        manager = FakeManager()
        res = {True: [], False: []}
        try:
            for _ in range(a.runs):
                for on in (False, True):
                    res[on].append(run_http(a.http_events, on, reg, manager, root))
        finally:
            manager.server.stop()
            reg.stop()
            shutil.rmtree(root, ignore_errors=True)
        off, on = statistics.median(res[False]), statistics.median(res[True])
        print(f"http wal off: median {off:,.0f} events/s  runs {[round(r) for r in res[False]]}")
        print(
            f"http wal on (os): median {on:,.0f} events/s  runs {[round(r) for r in res[True]]}"
            f"  ratio {on / off:.2f}"
        )


if __name__ == "__main__":
    main()
