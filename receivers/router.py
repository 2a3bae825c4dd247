"""The ingest router: validates events for a known stream and hands the good ones downstream.

Receivers (HTTP, ZeroMQ, sources) call `ingest_json` or `ingest_pairs`; the worker registers
each imported stream with its definition and a `deliver(events, wait) -> refused_count`
callable (the engine's input handler in standalone mode, the spout connection in distributed
mode); `wait` is how many seconds deliver may block for room before refusing events.
A stream whose events go through a write-ahead log also registers `progress() -> {"receiver_id",
"appended", "committed"}`: every result then says where the log stood once the batch was in
it, so a sender can keep its events until a checkpoint has committed them (the log's
`committed` reaches the `appended` it was told) and send them to another worker if this one
is lost before that."""

import logging
import threading
from dataclasses import dataclass

from receivers.exceptions import UnknownStreamError
from receivers.validation import EventValidator, IngestResult, StreamKey

log = logging.getLogger(__name__)


@dataclass
class StreamCounters:
    """Per-stream counts: accepted, rejected by validation, refused downstream."""

    accepted: int = 0
    rejected: int = 0
    refused: int = 0

    def to_dict(self):
        return {"accepted": self.accepted, "rejected": self.rejected, "refused": self.refused}


class _Route:
    __slots__ = ("validator", "deliver", "counters", "lock", "mapper", "progress")

    def __init__(self, definition, deliver, progress=None):
        self.progress = progress
        self.mapper = None  # the @map of the stream's HTTP source, for the worker endpoint
        self.validator = EventValidator(definition)
        self.deliver = deliver
        self.counters = StreamCounters()
        self.lock = threading.Lock()  # receivers on several threads update the counters


class IngestRouter:
    """StreamKey -> (validator, deliver); thread-safe registration, lock-free lookups."""

    def __init__(self):
        self._routes = {}
        self._lock = threading.Lock()

    def register(self, key, definition, deliver, progress=None):
        """Serve stream `key` (a StreamKey) with `definition`; good events go to `deliver`;
        `progress()` (a logged stream) tells each result where the log stands."""
        key = StreamKey(*key)
        with self._lock:
            routes = dict(self._routes)
            routes[key] = _Route(definition, deliver, progress)
            self._routes = routes

    def unregister_plan(self, tenant, plan):
        """Stop serving every stream of one plan."""
        with self._lock:
            self._routes = {
                k: v for k, v in self._routes.items() if (k.tenant, k.plan) != (tenant, plan)
            }

    def keys(self):
        return sorted(self._routes)

    def set_mapper(self, key, mapper):
        """Bodies POSTed to the worker endpoint for `key` are read with `mapper` (a
        cep.mapping input mapper: the @map of the stream's `@source(type='http')`)."""
        self._route(key).mapper = mapper

    def mapper(self, key):
        route = self._routes.get(StreamKey(*key))
        return route.mapper if route is not None else None

    def definition(self, key):
        return self._route(key).validator.definition

    def counters(self):
        """{"tenant/plan/stream": {accepted, rejected, refused}} for metrics."""
        return {str(k): r.counters.to_dict() for k, r in sorted(self._routes.items())}

    def ingest_json(self, key, events, wait=0.5):
        """Validate JSON-form events (see EventValidator.normalize) and deliver the good ones;
        `wait` is how long a full downstream may hold the caller before refusing."""
        route = self._route(key)
        good, errors = route.validator.validate_json(events)
        return self._deliver(route, key, good, errors, wait)

    def ingest_pairs(self, key, pairs, wait=0.5):
        """Validate `[ts, row]` pairs (the ZeroMQ form) and deliver the good ones."""
        route = self._route(key)
        good, errors = route.validator.validate_pairs(pairs)
        return self._deliver(route, key, good, errors, wait)

    def _route(self, key):
        route = self._routes.get(StreamKey(*key))
        if route is None:
            raise UnknownStreamError(f"no stream {StreamKey(*key)} on this worker")
        return route

    @staticmethod
    def _deliver(route, key, good, errors, wait):
        refused = route.deliver(good, wait) if good else 0
        refused = refused or 0
        result = IngestResult.of(len(good) - refused, errors)
        if route.progress is not None:  # read after the batch is in the log: an upper bound
            result.wal = route.progress()
        if refused:  # deliver takes a prefix of the good events: the last ones were refused
            bad = {i for i, _ in errors}
            indices = [i for i in range(len(good) + len(errors)) if i not in bad]
            result.refused, result.refused_indices = refused, indices[-refused:]
        c = route.counters
        with route.lock:
            c.accepted += result.accepted
            c.rejected += len(errors)
            c.refused += refused
        if errors:
            log.info(
                "%s: rejected %d of %d events, first: #%s %s",
                key,
                len(errors),
                len(errors) + len(good),
                errors[0][0],
                errors[0][1],
            )
        return result
