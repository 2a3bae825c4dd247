"""Cost of one checkpoint of a Siddhi bolt, in process (issue 11).

A Siddhi bolt runs a 10 s `time` window grouped by 50 keys in playback, filled with N events;
then its checkpoint state is taken (`checkpoint_state()`: the engine's snapshot, under the
engine lock, so the bolt waits for it), encoded as a store blob (msgpack, zlib level 1,
CRC32) and decoded again. Medians of --runs. The snapshot is synchronous: with a checkpoint
every 5 s, a 100 ms snapshot costs the bolt 2% of its time.

    .venv/bin/python benchmarks/checkpoint_bench.py --events 20000 100000 --runs 5
"""
import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from cep.bolt import SiddhiBolt  # noqa: E402
from topology.checkpoint.store import decode, encode  # noqa: E402
from topology.component import Batch, Collector, Context  # noqa: E402

OUT = {"W": ["ts", "k", "total", "n"]}
CONFIG = {"plan": "p", "tenant": -1, "group": "g", "playback": True,
          "inputs": ["define stream S (k string, v int);"],
          "outputs": ["define stream W (k string, total long, n long);"],
          "queries": "from S#window.time(10 sec) select k, sum(v) as total, count() as n "
                     "group by k insert into W;"}


def filled_bolt(n):
    bolt = SiddhiBolt(CONFIG)
    bolt.prepare(Context("bench", "cep", 0, 1, 0, OUT), Collector("cep", OUT))
    rows = [(1000 + i // 10, f"k{i % 50}", i % 10) for i in range(n)]
    for i in range(0, n, 1000):
        bolt.execute(Batch(rows[i:i + 1000], "S"))
        bolt.collector.take()
    return bolt


def measure(n, runs):
    bolt = filled_bolt(n)
    snap, enc, dec = [], [], []
    try:
        for _ in range(runs):
            t0 = time.perf_counter()
            state = bolt.checkpoint_state()
            t1 = time.perf_counter()
            blob = encode(state)
            t2 = time.perf_counter()
            decode(blob, "bench")
            t3 = time.perf_counter()
            snap.append(t1 - t0)
            enc.append(t2 - t1)
            dec.append(t3 - t2)
    finally:
        bolt.cleanup()
    ms = lambda xs: round(statistics.median(xs) * 1000, 1)  # noqa: E731
    return {"window_events": n, "snapshot_ms": ms(snap), "encode_ms": ms(enc),
            "decode_ms": ms(dec), "blob_bytes": len(blob), "engine_bytes": len(state["engine"]),
            "load": [round(x, 2) for x in os.getloadavg()]}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, nargs="+", default=[20000, 100000])
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args(argv)
    for n in args.events:
        print(json.dumps(measure(n, args.runs)), flush=True)


if __name__ == "__main__":
    main()
