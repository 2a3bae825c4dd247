"""The built-in benchmark: spout -> pass-through bolt -> counting bolt, on real Spark.

``run_bench(events, grouping, batch_size, rate)`` submits it, waits for ACTIVE, lets the
spout emit ``events`` rows (as fast as possible, or ``rate`` rows/s), counts every row at
the end, then kills the topology. Latency is per event: now minus the time its spout
emitted its batch, measured in the counting bolt.
"""

import bisect
import math
import os
import time

from topology.component import Bolt, Spout
from topology.launcher import submit
from topology.model import Topology

BUCKETS = [round(0.05 * 1.1**i, 4) for i in range(120)]  # ms, 0.05 .. ~4,500


class BenchSpout(Spout):
    """Emits config['events'] rows (seq, key) in batches, optionally rate-limited."""

    def open(self, context, collector):
        super().open(context, collector)
        self.total = int(self.config["events"]) // context.parallelism
        self.size = int(self.config.get("batch_size", 1000))
        self.rate = float(self.config.get("rate") or 0) / context.parallelism
        self.sent, self.first, self.done = 0, None, None

    def next_batch(self):
        if self.sent >= self.total:
            return None
        now = time.time()
        if self.first is None:
            self.first = now
        if self.rate and self.sent >= self.rate * (now - self.first):
            return None
        start, self.sent = self.sent, min(self.sent + self.size, self.total)
        if self.sent >= self.total:
            self.done = time.time()
        return [(i, i % 1000) for i in range(start, self.sent)]

    def custom_metrics(self):
        return {"sent": self.sent, "first": self.first, "done": self.done}


class PassBolt(Bolt):
    """Passes every batch on unchanged."""

    def execute(self, batch):
        self.emit(batch.rows)


class SinkBolt(Bolt):
    """Counts rows and keeps a latency histogram (events per bucket)."""

    def prepare(self, context, collector):
        super().prepare(context, collector)
        self.count, self.last = 0, None
        self.hist = [0] * (len(BUCKETS) + 1)

    def execute(self, batch):
        now = time.time()
        n = len(batch.rows)
        self.count += n
        self.last = now
        self.hist[bisect.bisect_left(BUCKETS, 1000.0 * (now - batch.origin_ts))] += n

    def custom_metrics(self):
        return {"count": self.count, "last": self.last, "hist": self.hist}


def bench_topology(events, grouping="shuffle", batch_size=1000, rate=0.0, name=None, parallelism=1):
    """The bench topology (fields grouping keys on the 'key' field)."""
    t = Topology(name or f"TopologyBench[{os.getpid()}]")
    t.add_spout(
        "spout",
        BenchSpout,
        outputs=["seq", "key"],
        config={"events": events, "batch_size": batch_size, "rate": rate},
    )
    group = ["key"] if grouping == "fields" else "shuffle"
    t.add_bolt(
        "pass", PassBolt, inputs={"spout": group}, outputs=["seq", "key"], parallelism=parallelism
    )
    t.add_bolt("sink", SinkBolt, inputs={"pass": group}, parallelism=parallelism)
    return t


def percentile(hist, q):
    """The bucket upper bound (ms) below which a fraction q of the events fell."""
    total = sum(hist)
    if not total:
        return None
    need, seen = math.ceil(q * total), 0
    for i, n in enumerate(hist):
        seen += n
        if seen >= need:
            return BUCKETS[i] if i < len(BUCKETS) else float("inf")
    return float("inf")


def run_bench(
    events=2_000_000,
    grouping="shuffle",
    batch_size=1000,
    rate=0.0,
    settings=None,
    timeout=300.0,
    parallelism=1,
    start_timeout=120.0,
):
    """Submit, measure, kill; returns the result dict (the CLI's --json object)."""
    started = time.monotonic()
    handle = submit(
        bench_topology(events, grouping, batch_size, rate, parallelism=parallelism), settings
    )
    try:
        handle.wait_for("ACTIVE", timeout=start_timeout)
        submit_to_active = time.monotonic() - started
        spout, sink = _wait_done(handle, events, timeout)
    finally:
        handle.kill(wait_secs=0)
    span = (sink["last"] or 0) - (spout["first"] or 0)
    return {
        "events_sent": spout["sent"],
        "events_received": sink["count"],
        "events_per_s": round(sink["count"] / span) if span > 0 else None,
        "latency_ms": {"p50": percentile(sink["hist"], 0.5), "p99": percentile(sink["hist"], 0.99)},
        "submit_to_active_s": round(submit_to_active, 2),
        "grouping": grouping,
        "batch_size": batch_size,
        "rate": rate,
        "parallelism": parallelism,
    }


def _wait_done(handle, events, timeout):
    """Poll metrics until the sink counted every event (or it stops progressing)."""
    deadline, last, stalled = time.monotonic() + timeout, -1, time.monotonic()
    while True:
        comps = handle.metrics()["components"]
        spout = comps["spout"]["instances"][0].get("custom") or {}
        sink = _merge_sinks([i.get("custom") or {} for i in comps["sink"]["instances"]])
        count = sink["count"]
        done = count >= events and spout.get("sent", 0) >= events  # both reports up to date
        if done or time.monotonic() > deadline or time.monotonic() - stalled > 15:
            return spout, sink
        if count != last:
            last, stalled = count, time.monotonic()
        time.sleep(0.2)


def _merge_sinks(customs):
    """One sink result from several instances: summed counts and histograms, latest time."""
    hist = [0] * (len(BUCKETS) + 1)
    for custom in customs:
        for i, n in enumerate(custom.get("hist", ())):
            hist[i] += n
    lasts = [c["last"] for c in customs if c.get("last")]
    return {
        "count": sum(c.get("count", 0) for c in customs),
        "hist": hist,
        "last": max(lasts) if lasts else None,
    }
