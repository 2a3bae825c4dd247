"""Pipeline benchmark: throughput and latency of the worker's parts of the event path.

Stages (each run `--runs` times after a warm-up; medians reported):
  ingest     client PUSH -> worker ZeroMQ receiver -> validation -> spout connection -> a PULL
             socket standing in for the receiver spout (registered with a real registry)
  publish    a PUSH socket standing in for a publisher bolt -> worker publisher service ->
             file sink (JSON lines)
  latency    HTTP-free latency receiver -> sink through a standalone worker running a filter
             plan on the engine, at a fixed rate (default 20K events/s): p50/p99 in ms
  full       worker -> spout -> Siddhi bolt -> publisher bolt -> worker publisher -> sink on
             Spark: needs the manager and topology runtime (skipped with a reason if missing)

    .venv/bin/python benchmarks/pipeline_bench.py --stage ingest --events 500000 --runs 5
"""
import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time

import zmq

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from manager.registry.client import RegistryClient  # noqa: E402
from manager.registry.service import RegistryService  # noqa: E402
from manager.registry.wire import decode_batch, encode_batch  # noqa: E402

TENANT, PLAN, STREAM = -1234, "Bench", "StockStream"
ATTRS = [["symbol", "string"], ["price", "double"], ["volume", "long"]]


def entry():
    return {"tenant": TENANT, "name": PLAN, "version": 1,
            "imported": [{"stream": STREAM, "attributes": ATTRS, "sources": []}],
            "exported": [{"stream": "Out", "attributes": ATTRS, "sinks": []}]}


def batches(n, size=1000, t0=1_700_000_000_000):
    syms = ["IBM", "WSO2", "ORCL", "MSFT"]
    out = []
    for b in range(0, n, size):
        out.append([[t0 + i, [syms[i % 4], float(i % 1000), i]] for i in range(b, min(n, b + size))])
    return out


def run_ingest(n):
    """Events/s from a PUSH client through the worker into a stand-in spout."""
    from cep.worker.inflow import SpoutConnection
    from cep.worker.plans import spec_from_deployment
    from receivers.router import IngestRouter
    from receivers.zmq_receiver import ZmqEventClient, ZmqReceiver
    reg = RegistryService(port=0, bind_host="127.0.0.1")
    reg.start()
    client = RegistryClient(f"tcp://127.0.0.1:{reg.port}")
    spout = zmq.Context.instance().socket(zmq.PULL)
    port = spout.bind_to_random_port("tcp://127.0.0.1")
    client.register("receiver", TENANT, PLAN, "127.0.0.1", port, streams=[STREAM])
    spec = spec_from_deployment(entry())
    conn = SpoutConnection(client, TENANT, PLAN, STREAM, "bench").start()
    router = IngestRouter()
    router.register((str(TENANT), PLAN, STREAM), spec.imported[0].definition, conn.offer)
    recv = ZmqReceiver(router, "tcp://127.0.0.1:0").start()
    sender = ZmqEventClient(recv.url)
    data = batches(n)
    got, t0 = 0, time.perf_counter()
    for b in data:
        sender.send((str(TENANT), PLAN, STREAM), b)
        while spout.poll(0):
            got += len(decode_batch(spout.recv())[1])
    while got < n:
        if not spout.poll(10000):
            raise RuntimeError(f"ingest: only {got} of {n} events arrived")
        got += len(decode_batch(spout.recv())[1])
    elapsed = time.perf_counter() - t0
    for part in (sender,):
        part.close()
    recv.stop()
    conn.stop()
    spout.close(0)
    client.close()
    reg.stop()
    return n / elapsed


def run_publish(n):
    """Events/s from a stand-in publisher bolt through the publisher service to a file sink."""
    from publishers.service import PublisherService
    from publishers.sink_set import SinkSet
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "out.jsonl")
        sset = SinkSet.from_specs({"Out": [{"type": "file", "options": {"path": path}}]}, "b")
        svc = PublisherService(sset, "127.0.0.1").start()
        push = zmq.Context.instance().socket(zmq.PUSH)
        push.connect(f"tcp://127.0.0.1:{svc.port}")
        frames = [encode_batch("Out", b) for b in batches(n)]
        t0 = time.perf_counter()
        for f in frames:
            push.send(f)
        while svc.events < n:
            time.sleep(0.001)
        elapsed = time.perf_counter() - t0
        push.close(0)
        svc.stop()
    return n / elapsed


LATENCY_PLAN = """@Plan:name('Bench')
define stream StockStream (symbol string, price double, volume long);
@sink(type='log')
define stream Out (symbol string, price double, volume long);
from StockStream[price >= 0.0] select symbol, price, volume insert into Out;
"""


def run_latency(n, rate):
    """p50/p99 ms from the worker's ZeroMQ receiver to the sink, standalone worker."""
    from cep.worker.config import load_config
    from cep.worker.node import Worker
    from publishers.base import Sink
    from receivers.zmq_receiver import ZmqEventClient
    with tempfile.TemporaryDirectory() as tmp:
        plan = os.path.join(tmp, "bench.siddhiql")
        with open(plan, "w") as fh:
            fh.write(LATENCY_PLAN)
        cfg = load_config(path=os.path.join(tmp, "none.yaml"), env={}, overrides={
            "worker.mode": "standalone", "standalone.plans": [plan], "http.port": 0,
            "http.host": "127.0.0.1", "zmq.port": 0, "zmq.host": "127.0.0.1"})
        w = Worker(cfg).start()
        while not w.plans:
            time.sleep(0.01)
        handle = next(iter(w.plans.values()))
        lat = []

        class Clock(Sink):
            type = "clock"

            def write_batch(self, events):
                now = time.time() * 1000
                lat.extend(now - ts for ts, _ in events)

        handle.sinks.add("Out", Clock("Out", {}))
        client = ZmqEventClient(w.zmq_url)
        per_ms = rate / 1000.0
        sent, t0 = 0, time.perf_counter()
        while sent < n:  # send what is due every millisecond, stamped with the send time
            due = min(n, int((time.perf_counter() - t0) * 1000 * per_ms) + 1)
            if due > sent:
                now = int(time.time() * 1000)
                client.send(("-1234", "Bench", STREAM),
                            [[now, ["IBM", 1.0, i]] for i in range(sent, due)])
                sent = due
            time.sleep(0.0005)
        deadline = time.time() + 10
        while len(lat) < n and time.time() < deadline:
            time.sleep(0.01)
        client.close()
        w.stop()
    lat.sort()
    return {"p50_ms": lat[len(lat) // 2], "p99_ms": lat[int(len(lat) * 0.99)],
            "received": len(lat)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stage", choices=["ingest", "publish", "latency", "all"], default="all")
    ap.add_argument("--events", type=int, default=300000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--rate", type=int, default=20000, help="latency stage: events/s")
    args = ap.parse_args(argv)
    print(f"# {platform.node()} {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} cores, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    stages = ["ingest", "publish", "latency"] if args.stage == "all" else [args.stage]
    for stage in stages:
        if stage == "latency":
            runs = [run_latency(args.rate * 3, args.rate) for _ in range(args.runs)]
            p99 = statistics.median(r["p99_ms"] for r in runs)
            p50 = statistics.median(r["p50_ms"] for r in runs)
            print(json.dumps({"stage": "latency", "rate": args.rate, "median_p50_ms": round(p50, 2),
                              "median_p99_ms": round(p99, 2), "runs": len(runs)}))
            continue
        fn = run_ingest if stage == "ingest" else run_publish
        fn(min(args.events, 50000))  # warm-up
        rates = [fn(args.events) for _ in range(args.runs)]
        print(json.dumps({"stage": stage, "events": args.events,
                          "median_events_per_s": int(statistics.median(rates)),
                          "runs": [int(r) for r in rates]}))


if __name__ == "__main__":
    main()
