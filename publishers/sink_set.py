"""A SinkSet routes each exported stream's batches to its sinks, isolating sink failures.

A failing sink is logged and counted; the other sinks of the stream still get the batch.
Batches with an identity (cep/protocol/frames.py) are checked for duplicates per stream
(`duplicates`); each sink then gets them by its delivery mode (publishers/delivery.py):
at-most-once sinks everything as it came, at-least-once sinks without the duplicates (or with
them, `dedup: false`), exactly-once sinks stage them until `control(commit)`. Batches and
notices from a stale stage attempt of their topology (a zombie after a partition) are refused
first (publishers/fencing.py): counted in `fenced`, never written, staged or committed."""

import logging
import threading

from publishers.delivery import AT_LEAST_ONCE, AT_MOST_ONCE, EXACTLY_ONCE, Dedup
from publishers.exceptions import PublisherError, SinkHeldError, UnknownOutputStreamError
from publishers.fencing import Fences, topology_of
from cep.protocol.frames import COMMIT, START
from publishers.sinks import DEFAULT_SPEC, build_sink

log = logging.getLogger(__name__)


class SinkSet:
    """stream id -> [sinks]; `dispatch(stream, events)`; per-stream counters."""

    def __init__(self, label=""):
        self.label = label
        self._sinks = {}
        self._counts = {}
        self._lock = threading.Lock()
        self.dedup = Dedup(label)
        self.fences = Fences()  # output of a topology's older stage attempts is refused
        self.publishers = {}  # publisher bolt id -> {"restored", "starts", "commits"}
        self.committed = None  # the last checkpoint a publisher bolt reported complete

    @classmethod
    def from_specs(
        cls,
        specs_by_stream,
        label="",
        policy=None,
        tenant=None,
        default=None,
        delivery=AT_LEAST_ONCE,
        dedup=True,
    ):
        """Build from {stream: [spec, ...]}; an empty list means `default(stream)` (a spec the
        worker itself chose, not confined by `policy`), else the default log sink. The plan's
        specs are built under `policy` (cep.policy.HostPolicy) for `tenant` when given;
        `delivery` and `dedup` are the defaults of sinks that name none."""
        sset = cls(label)
        try:
            for stream, specs in specs_by_stream.items():
                for spec in specs:
                    sset.add(stream, build_sink(spec, stream, policy, tenant, delivery, dedup))
                if not specs:
                    sset.add(
                        stream,
                        build_sink(
                            default(stream) if default else DEFAULT_SPEC,
                            stream,
                            delivery=delivery,
                            dedup=dedup,
                        ),
                    )
        except PublisherError:
            sset.close()
            raise
        return sset

    def add(self, stream, sink):
        self._sinks.setdefault(stream, []).append(sink)
        self._counts.setdefault(stream, {"events": 0, "batches": 0, "failed": 0, "duplicates": 0})

    @property
    def streams(self):
        return tuple(self._sinks)

    def dispatch(self, stream, events, ident=None):
        """Write one batch of `stream` to every sink of that stream; `ident` (a
        frames.Identity) lets duplicates be found and exactly-once sinks stage the batch."""
        sinks = self._sinks.get(stream)
        if sinks is None:
            raise UnknownOutputStreamError(
                f"{self.label}: no sink for stream {stream!r} "
                f"(serving {', '.join(self._sinks) or 'nothing'})"
            )
        counts = self._counts[stream]
        with self._lock:
            if ident is not None and not self.fences.admit(
                ident.publisher, ident.fence, len(events)
            ):
                counts["fenced"] = counts.get("fenced", 0) + len(events)
                self._stale(ident.publisher, ident.fence, f"{len(events)} events of {stream}")
                return
            counts["events"] += len(events)
            counts["batches"] += 1
            if ident is None:
                for sink in sinks:
                    self._write(sink, events, counts)
                return
            fresh, dups = self.dedup.fresh(stream, ident, events)
            counts["duplicates"] += dups
            for sink in sinks:
                self._deliver(sink, events, fresh, dups, ident, counts)
            self.dedup.taken()  # the marks of what the sinks took (on disk: confirmed)

    def _deliver(self, sink, events, fresh, dups, ident, counts):
        mode = sink.delivery
        if mode == EXACTLY_ONCE and ident.epoch >= 0:
            self._write(sink, events, counts, ident)
        elif mode == AT_MOST_ONCE or (mode == AT_LEAST_ONCE and not sink.dedup):
            self._write(sink, events, counts)
        else:  # at-least-once with dedup, or exactly-once without checkpoints (epoch -1)
            sink.dedup_dropped += dups  # what deduplication kept from this sink
            if fresh:
                self._write(sink, fresh, counts)

    def control(self, notice):
        """A publisher bolt's frames.Control: `start` (restored from a checkpoint or fresh)
        aborts what exactly-once sinks staged for it after that checkpoint; `commit` commits
        what they staged before the completed checkpoint."""
        with self._lock:
            if not self.fences.admit(notice.publisher, notice.fence):
                self._stale(notice.publisher, notice.fence, f"its {notice.kind} notice")
                return
            info = self.publishers.setdefault(
                notice.publisher, {"restored": None, "starts": 0, "commits": 0}
            )
            info["fence"] = list(notice.fence) if notice.fence is not None else None
            if notice.kind == START:
                info["starts"] += 1
                info["restored"] = notice.checkpoint
                self.dedup.restart(notice.publisher, notice.checkpoint)
            elif notice.kind == COMMIT:
                info["commits"] += 1
                self.committed = max(self.committed or 0, notice.checkpoint)
            for stream, sinks in self._sinks.items():
                for sink in sinks:
                    if sink.delivery == EXACTLY_ONCE:
                        self._control(sink, notice, self._counts[stream])

    def _stale(self, publisher, fence, what):
        refused = self.fences.refused[publisher]
        if refused == 1 or refused % 1000 == 0:  # the first, then every thousandth
            log.warning(
                "%s: refused %s from %s: its stage attempt %s is older than the "
                "topology's newest %s (a stale task, e.g. on a machine cut off and "
                "back); %d frame(s) refused so far",
                self.label,
                what,
                publisher,
                list(fence),
                list(self.fences.newest[topology_of(publisher)]),
                refused,
            )

    def _control(self, sink, notice, counts):
        try:
            if notice.kind == START:
                sink.restart(notice.publisher, notice.checkpoint)
            elif notice.checkpoint is not None:
                sink.commit(notice.checkpoint)
        except Exception as exc:  # noqa: BLE001 - the next commit notice tries again
            counts["commit_errors"] = counts.get("commit_errors", 0) + 1
            log.warning(
                "%s: %s sink of %s: %s of %s failed: %s",
                self.label,
                sink.type,
                sink.stream,
                notice.kind,
                notice.checkpoint,
                exc,
            )

    def _write(self, sink, events, counts, ident=None):
        try:
            if ident is not None:
                sink.stage(events, ident)
                return
            sink.write_batch(events)
        except SinkHeldError as exc:  # kept by the sink, written when it can
            counts["held"] = counts.get("held", 0) + len(events)
            log.warning(
                "%s: %s sink of %s holds %d events to write later: %s",
                self.label,
                sink.type,
                sink.stream,
                len(events),
                exc,
            )
        except PublisherError as exc:
            counts["failed"] += len(events)
            log.warning(
                "%s: %s sink of %s lost %d events: %s",
                self.label,
                sink.type,
                sink.stream,
                len(events),
                exc,
            )
        except Exception:  # a sink bug must not stop the other sinks or the service
            counts["failed"] += len(events)
            log.exception("%s: %s sink of %s failed", self.label, sink.type, sink.stream)

    def metrics(self):
        return {
            s: {**self._counts[s], "sinks": [k.describe() for k in sinks]}
            for s, sinks in self._sinks.items()
        }

    def duplicates(self):
        """Duplicates seen per stream (results a replay sent again)."""
        return {s: c["duplicates"] for s, c in self._counts.items()}

    def dropped_by_sink(self):
        """[(stream, sink type, index, duplicates deduplication kept from that sink)]."""
        return [
            (stream, sink.type, i, sink.dropped_duplicates())
            for stream, sinks in self._sinks.items()
            for i, sink in enumerate(sinks)
        ]

    def gaps(self):
        """Results that never reached this worker (gaps in a lane's numbers), and how many
        of them came later."""
        return {"gaps": self.dedup.lanes.gaps, "filled": self.dedup.lanes.filled}

    def marks(self):
        """The duplicate marks file's counters (publishers/marks_log.py), or None when the
        marks are kept in memory only."""
        store = self.dedup.store
        return None if store is None else store.metrics()

    def close(self):
        for sinks in self._sinks.values():
            for sink in sinks:
                try:
                    sink.close()
                except Exception:  # closing must reach every sink
                    log.exception("%s: closing %s sink failed", self.label, sink.type)
