"""Component base classes (Spout, Bolt), their Context, Batch and Collector.

A component is built as ``cls(config)`` (its config dict from the topology), then gets
``open(context, collector)`` (spouts) or ``prepare(context, collector)`` (bolts). Rows are
tuples in the declared field order of their stream; batches are lists of rows.
"""

from dataclasses import dataclass, field

from topology.exceptions import UnknownStreamError
from topology.grouping import DEFAULT_STREAM


@dataclass(frozen=True)
class Context:
    """Where an instance runs: topology name, component id, instance index, parallelism."""

    topology_name: str
    component_id: str
    index: int
    parallelism: int
    task_id: int = 0
    outputs: dict = field(default_factory=dict)
    topology_config: dict = field(default_factory=dict)
    attempt: int = 0
    security: object = None  # cep.security.curve.LinkSecurity of the links, or None (off)
    generation: int = 0  # the driver's start (ms) on Spark: (generation, attempt) fences output


class Batch:
    """Rows of one stream from one upstream task; ``origin_ts`` is when its spout emitted it;
    ``lineage`` the input lanes its rows came from (topology/lineage.py), or None."""

    __slots__ = ("stream", "source", "rows", "origin_ts", "lineage")

    def __init__(self, rows, stream=DEFAULT_STREAM, source="", origin_ts=0.0, lineage=None):
        self.rows = rows
        self.stream = stream
        self.source = source
        self.origin_ts = origin_ts
        self.lineage = lineage

    def __len__(self):
        return len(self.rows)

    def __iter__(self):
        return iter(self.rows)

    def __repr__(self):
        return f"Batch({self.source}/{self.stream}, {len(self.rows)} rows)"


class Collector:
    """Buffers what a component emits during one call; the runtime routes it afterwards."""

    def __init__(self, component_id, outputs):
        self.component_id = component_id
        self.outputs = outputs
        self.pending = []

    def emit(self, rows, stream=DEFAULT_STREAM, lineage=None):
        """Emit a batch (a list of rows) on a declared output stream; `lineage` (runs
        covering the rows, topology/lineage.py) gives them identities a replay keeps."""
        if stream not in self.outputs:
            raise UnknownStreamError(
                f"component {self.component_id!r} emitted on undeclared "
                f"stream {stream!r} (declared: {sorted(self.outputs)})",
                self.component_id,
                stream,
            )
        if rows:
            self.pending.append((stream, rows, lineage))

    def take(self):
        """Hand the buffered (stream, rows, lineage) triples to the runtime and clear the
        buffer."""
        pending, self.pending = self.pending, []
        return pending

    def discard(self):
        self.pending = []


class Component:
    """Common part of spouts and bolts: the config dict, then context and collector."""

    def __init__(self, config=None):
        self.config = dict(config or {})
        self.context = None
        self.collector = None

    def emit(self, rows, stream=DEFAULT_STREAM, lineage=None):
        """Shortcut for ``self.collector.emit``."""
        self.collector.emit(rows, stream, lineage)


class Spout(Component):
    """A source of batches. The runtime calls next_batch() while the topology is active."""

    def open(self, context, collector):
        """Called once before the first next_batch()."""
        self.context, self.collector = context, collector

    def next_batch(self):
        """Return rows for the default stream (or emit through the collector), or None when idle."""
        return None

    def ack(self, batch_id):
        """The batch was handed to the transport (at-most-once delivery, like WSO2 CEP 4.0)."""

    def fail(self, batch_id, reason):
        """The batch (or some of its rows) could not be routed; ``reason`` says why."""

    def activate(self):
        """The topology was activated: next_batch() calls resume."""

    def deactivate(self):
        """The topology was deactivated: next_batch() calls pause."""

    def close(self):
        """Called once when the instance stops."""


class Bolt(Component):
    """A processing step: execute(batch) for every batch on its inputs."""

    def prepare(self, context, collector):
        """Called once before the first execute()."""
        self.context, self.collector = context, collector

    def execute(self, batch):
        """Process one Batch; emit results with ``self.emit(rows, stream)``."""
        raise NotImplementedError(f"{type(self).__name__}.execute")

    def cleanup(self):
        """Called once when the instance stops (after its inputs drained on kill)."""
