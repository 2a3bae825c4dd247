"""Components with checkpoint state for the checkpoint tests (importable by Spark executors)."""
from topology.component import Bolt, Spout


class OffsetSpout(Spout):
    """Emits ``config["rows"]`` (its share) on ``config["stream"]``; its state is its position."""

    def open(self, context, collector):
        super().open(context, collector)
        rows = [tuple(r) for r in self.config["rows"]]
        self.rows = rows[context.index::context.parallelism]
        self.size = int(self.config.get("batch_size", 10))
        self.pos = 0
        self.committed = []

    def next_batch(self):
        if self.pos >= len(self.rows):
            return None
        batch = self.rows[self.pos:self.pos + self.size]
        self.pos += len(batch)
        self.emit(batch, self.config.get("stream", "default"))
        return None

    def checkpoint_state(self):
        return {"pos": self.pos}

    def restore_state(self, state):
        self.pos = state["pos"]

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
