"""The worker's Prometheus metrics (`GET /metrics`, text exposition by prometheus_client).

A collector reads the live counters at scrape time (receivers per stream, inflow to receiver
spouts, CEP publishers and their sinks), so nothing is counted twice and no per-event work is
added. Each worker has its own CollectorRegistry (not the process-wide one), so several
workers in one process (tests) do not clash."""

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

STREAM = ["tenant", "plan", "stream"]
PLAN = ["tenant", "plan"]


def _family(kind, name, doc, labels):
    cls = CounterMetricFamily if kind == "counter" else GaugeMetricFamily
    return cls(name, doc, labels=["worker", *labels])


class WorkerCollector:
    """Metric families of one worker, built from its status at each scrape."""

    def __init__(self, worker):
        self.worker = worker

    def collect(self):
        w = self.worker
        wid = w.identity.worker_id
        yield from self._receivers(wid, w.router.counters())
        handles = {f"{t}/{n}": h for (t, n), h in sorted(list(w.plans.items()))}
        yield from self._inflow(wid, handles)
        yield from self._publishers(wid, handles)
        yield from wal_families(wid, handles)
        yield from nats_families(wid, handles)
        if getattr(w, "ha", None) is not None:  # the standalone HA pair
            from cep.worker.ha.metrics import ha_families

            yield from ha_families(wid, w.ha)

    def _receivers(self, wid, counters):
        fams = {
            k: _family(
                "counter",
                f"cep_worker_receiver_events_{k}",
                f"events {k} by the worker's receivers, per stream",
                STREAM,
            )
            for k in ("accepted", "rejected", "refused")
        }
        for key, c in counters.items():
            labels = [wid, *key.split("/", 2)]
            for k, fam in fams.items():
                fam.add_metric(labels, c[k])
        return fams.values()

    def _inflow(self, wid, handles):
        sent = _family(
            "counter",
            "cep_worker_inflow_events_forwarded",
            "events forwarded to the plan's receiver spouts",
            STREAM,
        )
        refused = _family(
            "counter",
            "cep_worker_inflow_events_refused",
            "events refused because the inflow buffer was full",
            STREAM,
        )
        buffered = _family(
            "gauge",
            "cep_worker_inflow_buffered_events",
            "events queued for a receiver spout (queue depth)",
            STREAM,
        )
        conns = _family(
            "gauge",
            "cep_worker_inflow_connections",
            "open connections to receiver spouts (1 per served stream)",
            STREAM,
        )
        for key, h in handles.items():
            for stream, c in getattr(h, "inflows", {}).items():
                m = c.metrics()
                labels = [wid, *key.split("/", 1), stream]
                sent.add_metric(labels, m["sent"])
                refused.add_metric(labels, m["refused"])
                buffered.add_metric(labels, m["buffered"])
                conns.add_metric(labels, 1 if m["connected"] else 0)
        return sent, refused, buffered, conns

    def _publishers(self, wid, handles):
        frames = _family(
            "counter",
            "cep_worker_publisher_events_received",
            "events the plan's CEP publisher took from publisher bolts",
            PLAN,
        )
        dropped = _family(
            "counter",
            "cep_worker_publisher_frames_dropped",
            "frames the CEP publisher could not decode or route",
            PLAN,
        )
        sent = _family(
            "counter", "cep_worker_sink_events_sent", "events written to the stream's sinks", STREAM
        )
        errors = _family(
            "counter", "cep_worker_sink_events_failed", "events a sink failed to write", STREAM
        )
        dups = _family(
            "counter",
            "cep_worker_sink_duplicates",
            "results a replay sent again, recognised by their identity",
            STREAM,
        )
        dropped_by_sink = _family(
            "counter",
            "cep_worker_sink_dedup_dropped",
            "replayed results deduplication kept from this sink "
            "(sink: <type>#<index in the stream's sinks>)",
            STREAM + ["sink"],
        )
        gaps = _family(
            "counter",
            "cep_worker_publisher_result_gaps",
            "results missing from a lane's numbers: never reached this worker (logged at ERROR)",
            PLAN,
        )
        uncertain = _family(
            "counter",
            "cep_worker_publisher_marks_uncertain",
            "results the sinks were taking when the worker process died (their duplicate marks "
            "were not confirmed): a replay may write them twice",
            PLAN,
        )
        for key, h in handles.items():
            service = getattr(h, "service", None)
            if service is not None:
                m = service.metrics()
                frames.add_metric([wid, *key.split("/", 1)], m["events"])
                dropped.add_metric([wid, *key.split("/", 1)], m["dropped_frames"])
                gaps.add_metric([wid, *key.split("/", 1)], m.get("gaps", 0))
                marks = m.get("marks") or {}
                uncertain.add_metric([wid, *key.split("/", 1)], marks.get("uncertain", 0))
                streams = m["streams"]
            elif getattr(h, "sinks", None) is not None:  # standalone: the engine feeds the sinks
                streams = h.sinks.metrics()
            else:
                continue
            for stream, s in streams.items():
                labels = [wid, *key.split("/", 1), stream]
                sent.add_metric(labels, s.get("events", 0))
                errors.add_metric(labels, s.get("failed", 0))
                dups.add_metric(labels, s.get("duplicates", 0))
                for i, sink in enumerate(s.get("sinks", ())):
                    dropped_by_sink.add_metric(
                        labels + [f"{sink.get('type')}#{i}"], sink.get("dedup_dropped", 0)
                    )
        return frames, dropped, sent, errors, dups, dropped_by_sink, gaps, uncertain


WAL_GAUGES = {  # LoggedSpoutConnection.metrics()["wal"] key -> (metric, help)
    "size_bytes": ("cep_worker_wal_size_bytes", "bytes of the stream's write-ahead log"),
    "segments": ("cep_worker_wal_segments", "segment files of the stream's write-ahead log"),
    "oldest_uncommitted_age_s": (
        "cep_worker_wal_oldest_uncommitted_age_seconds",
        "age of the oldest event no checkpoint covers yet",
    ),
    "appended_offset": ("cep_worker_wal_appended_offset", "last offset appended to the log"),
    "committed_offset": ("cep_worker_wal_committed_offset", "last offset committed (-1: none)"),
}
WAL_COUNTERS = {
    "corrupt_records": (
        "cep_worker_wal_corrupt_records",
        "log records that failed their CRC32 (reported, never replayed)",
    ),
    "full_refusals": (
        "cep_worker_wal_backpressure",
        "appends refused because the log was "
        "over wal.max_bytes or wal.max_age_s (HTTP 503, ZeroMQ held)",
    ),
    "write_errors": ("cep_worker_wal_write_errors", "group-commit rounds that failed"),
}


def wal_families(wid, handles):
    """The write-ahead log of each imported stream, from its inflow's metrics."""
    fams = {k: _family("gauge", n, h, STREAM) for k, (n, h) in WAL_GAUGES.items()}
    fams.update({k: _family("counter", n, h, STREAM) for k, (n, h) in WAL_COUNTERS.items()})
    replayed = _family(
        "counter",
        "cep_worker_wal_replayed_events",
        "events re-sent to a receiver spout on its replay request",
        STREAM,
    )
    for key, h in handles.items():
        for stream, c in getattr(h, "inflows", {}).items():
            m = c.metrics()
            if "wal" not in m:
                continue
            labels = [wid, *key.split("/", 1), stream]
            for k, fam in fams.items():
                fam.add_metric(labels, m["wal"][k])
            replayed.add_metric(labels, m["replayed"])
    return [*fams.values(), replayed]


NATS_STREAM_GAUGES = {  # connectors/nats_transport.stream_report key -> (metric, help)
    "messages": ("cep_worker_nats_stream_messages", "messages the plan's JetStream stream holds"),
    "published": (
        "cep_worker_nats_stream_published_messages",
        "messages the stream took (its last sequence)",
    ),
    "acked": (
        "cep_worker_nats_stream_acked_messages",
        "the lowest acknowledgement floor of the stream's consumers (a sequence)",
    ),
    "pending": (
        "cep_worker_nats_stream_pending_messages",
        "the most messages one consumer of the stream has not acknowledged",
    ),
    "consumers": ("cep_worker_nats_stream_consumers", "durable consumers of the stream"),
}


def nats_families(wid, handles):
    """The NATS JetStream transport (topology.transport: nats): events this worker published
    to a plan's inflow stream and JetStream confirmed, events of the outflow frames it handed
    to the sinks and acknowledged, and each stream's state (direction in/out) as its inflow
    and publisher service last read it."""
    published = _family(
        "counter",
        "cep_worker_nats_inflow_events_published",
        "events published to the plan's JetStream inflow stream (re-sends counted again)",
        STREAM,
    )
    acked = _family(
        "counter",
        "cep_worker_nats_inflow_events_acked",
        "events JetStream confirmed it stored in the plan's inflow stream",
        STREAM,
    )
    out_acked = _family(
        "counter",
        "cep_worker_nats_outflow_events_acked",
        "events of outflow frames handed to the sinks and acknowledged to JetStream",
        PLAN,
    )
    streams = {
        k: _family("gauge", n, h, PLAN + ["direction"]) for k, (n, h) in NATS_STREAM_GAUGES.items()
    }
    for key, h in handles.items():
        plan = key.split("/", 1)
        report_in = None
        for stream, c in getattr(h, "inflows", {}).items():
            m = c.metrics()
            if m.get("transport") != "nats":
                continue
            published.add_metric([wid, *plan, stream], m["published"])
            acked.add_metric([wid, *plan, stream], m["acked"])
            report_in = report_in or m.get("jetstream")
        service = getattr(h, "service", None)
        m = service.metrics() if service is not None else {}
        if m.get("transport") == "nats":
            out_acked.add_metric([wid, *plan], m["acked"])
        for direction, report in (("in", report_in), ("out", m.get("jetstream"))):
            if report and report.get("exists"):
                for k, fam in streams.items():
                    fam.add_metric([wid, *plan, direction], report[k])
    return [published, acked, out_acked, *streams.values()]


def worker_registry(worker):
    """A CollectorRegistry of its own holding the worker's collector."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(WorkerCollector(worker))
    return registry
