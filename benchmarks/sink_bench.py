"""Sink delivery modes benchmark: throughput and latency of each delivery mode, in one
run, alternating the modes in every round.

  throughput  a SinkSet with one file sink (or Redis sink) in the given mode takes identified
              1,000-event batches (what the publisher service hands it after decoding);
              exactly-once sinks get a commit notice every --commit-every batches (a checkpoint
              every 50,000 events by default): events/s per mode, medians of --runs
  latency     the same at a steady --rate (20,000 events/s) for --seconds, with a checkpoint
              completing every --interval s: per batch, the time from dispatch until a reader
              can see it (written, or committed for exactly-once): p50 and p99 per mode

    .venv/bin/python benchmarks/sink_bench.py --runs 5
    .venv/bin/python benchmarks/sink_bench.py --stage latency --rate 20000 --interval 1
Redis modes run when redis-server is on PATH (a private one on a free port) or --redis-url.
"""

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from cep.protocol.frames import Control, Identity  # noqa: E402
from publishers.sink_set import SinkSet  # noqa: E402

MODES = [
    ("file", "at-most-once", {}),
    ("file", "at-least-once", {}),
    ("file", "at-least-once", {"dedup": "false"}),
    ("file", "exactly-once", {}),
]
REDIS_MODES = [
    ("redis", "at-most-once", {}),
    ("redis", "at-least-once", {}),
    ("redis", "exactly-once", {}),
]
PUB = "SinkBench[-1234]:outS:0"


def batch(start, size, t0=1_700_000_000_000):
    return [(t0 + i, ("IBM", float(i % 1000), i)) for i in range(start, start + size)]


def label(kind, mode, extra):
    return f"{kind} {mode}" + (" dedup=false" if extra.get("dedup") == "false" else "")


def sink_set(kind, mode, extra, folder, redis_url, run):
    opts = {"delivery": mode, **extra}
    if kind == "file":
        opts["path"] = os.path.join(folder, f"{run}-{mode}-{len(extra)}.jsonl")
    else:
        opts.update(url=redis_url, key=f"bench:{run}:{mode}:{len(extra)}")
    sset = SinkSet.from_specs({"S": [{"type": kind, "options": opts}]}, "bench")
    sset.control(Control("start", PUB, None))
    return sset


def throughput(sset, events, size, commit_every):
    batches = [batch(i, size) for i in range(0, events, size)]
    started = time.perf_counter()
    epoch = 0
    for n, b in enumerate(batches):
        sset.dispatch("S", b, Identity(PUB, epoch, (n % commit_every) * size))
        if (n + 1) % commit_every == 0:  # barrier epoch+1 passed, then it completes
            epoch += 1
            sset.control(Control("commit", PUB, epoch))
    sset.control(Control("commit", PUB, epoch + 1))
    return events / (time.perf_counter() - started)


def latency(sset, rate, seconds, interval, size, exactly_once):
    """Per batch: seconds from dispatch until visible to a reader."""
    lat, pending, epoch, seq = [], [], 0, 0
    start = time.perf_counter()
    next_ckpt = start + interval
    total = int(rate * seconds)
    for n, first in enumerate(range(0, total, size)):
        due = start + first / rate
        while time.perf_counter() < due:
            time.sleep(0.0002)
        sent = time.perf_counter()
        sset.dispatch("S", batch(first, size), Identity(PUB, epoch, seq))
        seq += size
        if exactly_once:
            pending.append(sent)
        else:
            lat.append(time.perf_counter() - sent)
        if time.perf_counter() >= next_ckpt:  # a checkpoint completes: epochs < epoch+1 commit
            epoch, seq = epoch + 1, 0
            sset.control(Control("commit", PUB, epoch))
            done = time.perf_counter()
            lat.extend(done - t for t in pending)
            pending, next_ckpt = [], next_ckpt + interval
    if pending:
        sset.control(Control("commit", PUB, epoch + 1))
        done = time.perf_counter()
        lat.extend(done - t for t in pending)
    lat.sort()
    return lat[len(lat) // 2], lat[min(len(lat) - 1, int(len(lat) * 0.99))]


def start_redis(folder):
    path = shutil.which("redis-server")
    if not path:
        return None, None
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [
            path,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            folder,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    import redis

    client = redis.Redis(port=port)
    for _ in range(100):
        try:
            client.ping()
            break
        except redis.ConnectionError:
            time.sleep(0.05)
    return proc, f"redis://127.0.0.1:{port}/0"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--stage", choices=("all", "throughput", "latency"), default="all")
    ap.add_argument("--events", type=int, default=300_000)
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--commit-every", type=int, default=50)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--rate", type=int, default=20_000)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--interval", type=float, default=1.0)
    ap.add_argument("--redis-url", default="")
    args = ap.parse_args()
    folder = tempfile.mkdtemp(prefix="sink-bench-")
    proc, url = (None, args.redis_url) if args.redis_url else start_redis(folder)
    modes = MODES + (REDIS_MODES if url else [])
    print(f"load average {os.getloadavg()[0]:.1f}; redis {'on' if url else 'off'}")
    try:
        if args.stage in ("all", "throughput"):
            rates = {label(*m): [] for m in modes}
            for run in range(args.runs):
                for m in modes:
                    sset = sink_set(*m, folder, url, f"t{run}")
                    rates[label(*m)].append(
                        throughput(sset, args.events, args.batch, args.commit_every)
                    )
                    sset.close()
            base = statistics.median(rates[label(*MODES[0])])
            for name, values in rates.items():
                med = statistics.median(values)
                print(
                    f"throughput  {name:34s} {med:>11,.0f} ev/s  ({med / base:.2f} of file "
                    f"at-most-once; runs {', '.join(f'{v:,.0f}' for v in values)})"
                )
        if args.stage in ("all", "latency"):
            for m in modes:
                sset = sink_set(*m, folder, url, "lat")
                p50, p99 = latency(
                    sset,
                    args.rate,
                    args.seconds,
                    args.interval,
                    max(1, args.rate // 1000),
                    m[1] == "exactly-once",
                )
                sset.close()
                print(
                    f"latency     {label(*m):34s} p50 {p50 * 1000:8.2f} ms  p99 "
                    f"{p99 * 1000:8.2f} ms  at {args.rate:,} ev/s, checkpoints every "
                    f"{args.interval} s"
                )
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(5)
        shutil.rmtree(folder, ignore_errors=True)
    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
