"""Duplicate marks benchmark: the CPU cost per output frame of keeping the duplicate marks of
at-least-once output on disk (publishers/marks_log.py), next to keeping them in memory only.

Each round runs, for every way of keeping the marks (memory, os, fsync), --frames version 5
frames of --events events in one lane through Dedup.fresh + taken (what the publisher service
does per frame, without the sinks and sockets) and measures the CPU time of this process,
every thread included (the fsync group commit's thread too): wall-clock rates on a shared
machine swing with the load, CPU time much less. Medians of --runs rounds.

    .venv/bin/python benchmarks/marks_bench.py --runs 3
The whole publisher path (socket, file sink, acknowledgements) is pipeline_bench.py's
publish stage: `--stage publish --marks memory,os,fsync`."""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from cep.protocol.frames import Identity  # noqa: E402
from publishers.delivery import Dedup  # noqa: E402
from publishers.marks_log import MarksLog  # noqa: E402

LANE = "w1/-1234/Bench/StockStream#0a1b2c3d|f:0"
PUB = "Bench[-1234]:EventPublisherBolt:0"


def run(mode, frames, size):
    """CPU microseconds per frame with the marks kept in `mode`."""
    events = [(1_700_000_000_000 + i, ("IBM", 1.0, i)) for i in range(size)]
    idents = [Identity(PUB, 0, k * size, ((LANE, k * size, size),)) for k in range(frames)]
    with tempfile.TemporaryDirectory() as tmp:
        dedup, store = Dedup("bench"), None
        if mode != "memory":
            store = MarksLog(os.path.join(tmp, "plan.marks"), mode, "bench").open(dedup)
        c0 = time.process_time()
        for ident in idents:
            dedup.fresh("Out", ident, events)
            dedup.taken()
        if store is not None:
            while store.durable() < store.ticket():  # the last group commit
                time.sleep(0.0005)
        cpu = time.process_time() - c0
        if store is not None:
            store.close()
    return cpu / frames * 1e6


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=50000)
    ap.add_argument("--events", type=int, default=100, help="events per frame")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args(argv)
    modes = ("memory", "os", "fsync")
    for mode in modes:  # warm-up
        run(mode, min(args.frames, 5000), args.events)
    cpu = {m: [] for m in modes}
    for _ in range(args.runs):
        for mode in modes:
            cpu[mode].append(run(mode, args.frames, args.events))
    for mode in modes:
        print(
            json.dumps(
                {
                    "marks": mode,
                    "frames": args.frames,
                    "events_per_frame": args.events,
                    "median_cpu_us_per_frame": round(statistics.median(cpu[mode]), 2),
                    "runs": [round(c, 2) for c in cpu[mode]],
                    "load": round(os.getloadavg()[0], 1),
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    main()
