"""Publishers: how results leave a worker (sinks: log, file, HTTP POST, ZeroMQ PUB, Redis XADD).

A sink takes batches of `(timestamp, row)` events of one exported stream (`write_batch`); a
SinkSet routes each stream's batches to its sinks; the PublisherService receives the batches
that the topology's publisher bolts send and hands them to a SinkSet."""

from publishers.sinks import build_sink, sink_specs_from_annotations, SINK_TYPES
from publishers.sink_set import SinkSet

__all__ = ["build_sink", "sink_specs_from_annotations", "SINK_TYPES", "SinkSet"]
