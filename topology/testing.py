"""Components for tests and examples, importable by Spark executors.

- ``ListSpout``: emits ``config["rows"]`` in batches of ``config["batch_size"]``, split over
  its instances (instance i takes every i-th row), then idles.
- ``CounterSpout``: emits ``(n,)`` rows forever (``config["batch_size"]`` per call, optional
  ``config["rate"]`` rows/s per instance).
- ``SplitBolt``: sentence -> words. ``CountBolt``: counts field 0, writes counts as JSON to
  ``config["out_dir"]/<component>-<index>.json`` every second and on cleanup.
- ``CollectBolt``: keeps every row it receives in ``self.rows`` (for run_local).
- ``FailingBolt``: raises on rows whose field 0 equals ``config["bad"]``, passes others on.
- ``BrokenSpout``: raises ``RuntimeError(config["message"])`` in open() (failure tests).
- ``SlowBolt``: sleeps ``config["sleep_ms"]`` per batch (backpressure tests).
"""

import json
import os
import time
from pathlib import Path

from topology.component import Bolt, Spout


class ListSpout(Spout):
    """Emits a fixed list of rows once, split over the spout's instances."""

    def open(self, context, collector):
        super().open(context, collector)
        rows = [tuple(r) for r in self.config.get("rows", [])]
        self.rows = rows[context.index :: context.parallelism]
        self.size = int(self.config.get("batch_size", 100))
        self.pos = 0

    def next_batch(self):
        if self.pos >= len(self.rows):
            return None
        batch = self.rows[self.pos : self.pos + self.size]
        self.pos += self.size
        return batch


class CounterSpout(Spout):
    """Emits consecutive integers forever, optionally rate-limited."""

    def open(self, context, collector):
        super().open(context, collector)
        self.size = int(self.config.get("batch_size", 100))
        self.rate = float(self.config.get("rate", 0))
        self.n = 0
        self.started = time.monotonic()

    def next_batch(self):
        if self.rate and self.n > self.rate * (time.monotonic() - self.started):
            return None
        start, self.n = self.n, self.n + self.size
        return [(i,) for i in range(start, self.n)]


class SplitBolt(Bolt):
    """Splits field 0 (a sentence) into one row per word."""

    def execute(self, batch):
        self.emit([(w,) for row in batch.rows for w in row[0].split()])


class CountBolt(Bolt):
    """Counts rows by field 0; persists the counts to out_dir when configured."""

    def prepare(self, context, collector):
        super().prepare(context, collector)
        self.counts = {}
        out = self.config.get("out_dir")
        self.path = Path(out) / f"{context.component_id}-{context.index}.json" if out else None
        self.saved = time.monotonic()

    def execute(self, batch):
        counts = self.counts
        for row in batch.rows:
            counts[row[0]] = counts.get(row[0], 0) + 1
        if self.path and time.monotonic() - self.saved > 1.0:
            self.save()

    def save(self):
        tmp = self.path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(json.dumps({"attempt": self.context.attempt, "counts": self.counts}))
        tmp.replace(self.path)
        self.saved = time.monotonic()

    def cleanup(self):
        if self.path:
            self.save()


class CollectBolt(Bolt):
    """Keeps every row it receives (and passes them on if it declares an output)."""

    def prepare(self, context, collector):
        super().prepare(context, collector)
        self.rows = []

    def execute(self, batch):
        self.rows.extend(batch.rows)
        if self.context.outputs:
            self.emit(list(batch.rows))


class FailingBolt(Bolt):
    """Raises on rows whose field 0 equals config['bad']; passes the others on."""

    def execute(self, batch):
        bad = self.config.get("bad")
        if any(row[0] == bad for row in batch.rows):
            raise ValueError(f"bad row value {bad!r}")
        self.emit(list(batch.rows))


class SlowBolt(Bolt):
    """Sleeps config['sleep_ms'] per batch (to show backpressure), passes rows on."""

    def execute(self, batch):
        time.sleep(float(self.config.get("sleep_ms", 10)) / 1000.0)
        if self.context.outputs:
            self.emit(list(batch.rows))


class BrokenSpout(Spout):
    """Fails in open() with config['message']."""

    def open(self, context, collector):
        raise RuntimeError(self.config.get("message", "broken spout"))
