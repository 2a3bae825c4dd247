"""A SinkSet routes each exported stream's batches to its sinks, isolating sink failures.

A failing sink is logged and counted; the other sinks of the stream still get the batch."""
import logging
import threading

from publishers.exceptions import PublisherError, UnknownOutputStreamError
from publishers.sinks import DEFAULT_SPEC, build_sink

log = logging.getLogger(__name__)


class SinkSet:
    """stream id -> [sinks]; `dispatch(stream, events)`; per-stream counters."""

    def __init__(self, label=""):
        self.label = label
        self._sinks = {}
        self._counts = {}
        self._lock = threading.Lock()

    @classmethod
    def from_specs(cls, specs_by_stream, label="", policy=None, tenant=None, default=None):
        """Build from {stream: [spec, ...]}; an empty list means `default(stream)` (a spec the
        worker itself chose, not confined by `policy`), else the default log sink. The plan's
        specs are built under `policy` (cep.policy.HostPolicy) for `tenant` when given."""
        sset = cls(label)
        try:
            for stream, specs in specs_by_stream.items():
                for spec in specs:
                    sset.add(stream, build_sink(spec, stream, policy, tenant))
                if not specs:
                    sset.add(stream, build_sink(default(stream) if default else DEFAULT_SPEC,
                                                stream))
        except PublisherError:
            sset.close()
            raise
        return sset

    def add(self, stream, sink):
        self._sinks.setdefault(stream, []).append(sink)
        self._counts.setdefault(stream, {"events": 0, "batches": 0, "failed": 0})

    @property
    def streams(self):
        return tuple(self._sinks)

    def dispatch(self, stream, events):
        """Write one batch of `stream` to every sink of that stream."""
        sinks = self._sinks.get(stream)
        if sinks is None:
            raise UnknownOutputStreamError(f"{self.label}: no sink for stream {stream!r} "
                                           f"(serving {', '.join(self._sinks) or 'nothing'})")
        counts = self._counts[stream]
        with self._lock:
            counts["events"] += len(events)
            counts["batches"] += 1
            for sink in sinks:
                self._write(sink, events, counts)

    def _write(self, sink, events, counts):
        try:
            sink.write_batch(events)
        except PublisherError as exc:
            counts["failed"] += len(events)
            log.warning("%s: %s sink of %s lost %d events: %s", self.label, sink.type,
                        sink.stream, len(events), exc)
        except Exception:  # a sink bug must not stop the other sinks or the service
            counts["failed"] += len(events)
            log.exception("%s: %s sink of %s failed", self.label, sink.type, sink.stream)

    def metrics(self):
        return {s: {**self._counts[s], "sinks": [k.describe() for k in sinks]}
                for s, sinks in self._sinks.items()}

    def close(self):
        for sinks in self._sinks.values():
            for sink in sinks:
                try:
                    sink.close()
                except Exception:  # closing must reach every sink
                    log.exception("%s: closing %s sink failed", self.label, sink.type)
