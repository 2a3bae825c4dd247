"""Components with checkpoint state for the checkpoint tests (importable by Spark executors)."""

import json
import os
import time
from pathlib import Path

from topology.component import Bolt, Spout


class OffsetSpout(Spout):
    """Emits ``config["rows"]`` (its share) on ``config["stream"]``; its state is its position."""

    def open(self, context, collector):
        super().open(context, collector)
        rows = [tuple(r) for r in self.config["rows"]]
        self.rows = rows[context.index :: context.parallelism]
        self.size = int(self.config.get("batch_size", 10))
        self.pos = 0
        self.committed = []
        self.rate = float(self.config.get("rate", 0))  # rows/s; 0: as fast as possible
        self.started, self.base = time.monotonic(), 0

    def next_batch(self):
        if self.pos >= len(self.rows):
            return None
        if self.rate and self.pos - self.base > self.rate * (time.monotonic() - self.started):
            return None
        batch = self.rows[self.pos : self.pos + self.size]
        self.pos += len(batch)
        self.emit(batch, self.config.get("stream", "default"))
        return None

    def checkpoint_state(self):
        return {"pos": self.pos}

    def restore_state(self, state):
        self.pos = self.base = state["pos"]

    def checkpoint_complete(self, cid, state):
        self.committed.append((cid, state["pos"]))


class SeenBolt(Bolt):
    """Keeps every row it received (its state) and passes them on."""

    def prepare(self, context, collector):
        super().prepare(context, collector)
        self.rows = []

    def execute(self, batch):
        self.rows.extend(batch.rows)

    def checkpoint_state(self):
        return {"rows": list(self.rows)}

    def restore_state(self, state):
        self.rows = [tuple(r) for r in state["rows"]]


class FileLinesBolt(Bolt):
    """Appends every row as a JSON line ``[generation, row]`` to
    ``out_dir/<component>-<index>.jsonl`` (an at-least-once file sink: rows replayed after a
    restore are written again); the generation is new at every prepare (stage attempt)."""

    def prepare(self, context, collector):
        super().prepare(context, collector)
        self.generation = f"{os.getpid()}-{time.time_ns()}"
        path = Path(self.config["out_dir"]) / f"{context.component_id}-{context.index}.jsonl"
        self.fh = open(path, "a")

    def execute(self, batch):
        gen = self.generation
        self.fh.write("".join(json.dumps([gen, list(r)]) + "\n" for r in batch.rows))
        self.fh.flush()
        os.fsync(self.fh.fileno())

    def cleanup(self):
        self.fh.close()
