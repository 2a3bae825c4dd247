"""Drive a broker source into the worker's ingest router on a thread of its own.

A broker source has `open()`, `fetch(timeout) -> Fetched | None`, `ack(token)`, `close()` and
`describe()`. The pump hands each fetched batch to `router.ingest_json` and acknowledges it
to the broker only once every event was either taken (the stream's write-ahead log holds it,
when the worker has one) or rejected by validation (logged and counted, as the HTTP receiver
does): an event the worker did not take stays unacknowledged at the broker. Events the
stream's full buffer refused are offered again (back-pressure: the source reads no further);
a full write-ahead log holds the batch the same way."""

import logging
import threading
from dataclasses import dataclass, field

from connectors.mapping import json_batch_decoder, mapped_batch_decoder, mapped_decoder, to_pairs
from receivers.exceptions import UnknownStreamError
from receivers.validation import StreamKey
from receivers.wal.exceptions import WalClosedError, WalError

log = logging.getLogger(__name__)


@dataclass
class Fetched:
    """What one fetch brought: JSON events, reasons for payloads that held none, and what
    to acknowledge once they are taken."""

    events: list
    bad: list = field(default_factory=list)
    token: object = None
    pairs: bool = False  # events are already `[ts, row]` pairs (a batch decoder made them)


def decode_batch(source, payloads, label):
    """Decode the messages of one fetch with the source's `decode_many` (set by the pump: one
    call per batch); (events, pairs, reasons), each reason prefixed by `label(index)`."""
    events, pairs, bad = source.decode_many(payloads)
    return events, pairs, [f"{label(i)}: {r}" for i, r in bad]


class BrokerPump:
    """Runs `source` into `router` for stream `key`; start(), stop(), describe()."""

    def __init__(self, source, router, key, fetch_timeout=0.5, mapper=None):
        """`mapper`: the source's `@map` (a cep.mapping InputMapper): messages are decoded
        with it into (ts, row) pairs; without one they are this system's JSON."""
        self.source, self.router, self.key = source, router, StreamKey(*key)
        self.mapper = mapper
        if mapper is not None:
            source.decode = mapped_decoder(mapper)
        source.decode_many = (
            mapped_batch_decoder(mapper)
            if mapper is not None
            else json_batch_decoder(self.key.stream)
        )
        self.fetch_timeout = fetch_timeout
        self.accepted = self.rejected = self.bad_payloads = self.fetch_errors = 0
        self.last_error = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"source {self.key}", daemon=True)

    def start(self):
        self.source.open()
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)
        self.source.close()

    def _run(self):
        while not self._stop.is_set():
            try:
                fetched = self.source.fetch(self.fetch_timeout)
            except Exception as exc:  # noqa: BLE001 - a broker down: report, wait, retry
                self.fetch_errors += 1
                self.last_error = f"{type(exc).__name__}: {exc}"
                if self.fetch_errors % 20 == 1:
                    log.warning(
                        "source %s: %s fetch failed: %s",
                        self.key,
                        self.source.type,
                        self.last_error,
                    )
                self._stop.wait(1.0)
                continue
            if fetched is None:
                continue
            for reason in fetched.bad:
                self.bad_payloads += 1
                if self.bad_payloads % 100 == 1:
                    log.warning(
                        "source %s: a %s message is not an event (%d so far): %s",
                        self.key,
                        self.source.type,
                        self.bad_payloads,
                        reason,
                    )
            if fetched.events and not self._ingest(fetched.events, fetched.pairs):
                return  # stopping: the batch stays unacknowledged, the broker keeps it
            self.source.ack(fetched.token)

    def _ingest(self, events, are_pairs=False):
        """True once every event was taken or rejected; False when stopping first."""
        pending = events
        pairs = (
            events if are_pairs or self.mapper is not None else to_pairs(events, self.key.stream)
        )
        if pairs is not None:  # the common shape: the validator's fast path
            pending = pairs
        ingest = self.router.ingest_json if pairs is None else self.router.ingest_pairs
        while pending and not self._stop.is_set():
            try:
                result = ingest(self.key, pending, wait=1.0)
            except (WalClosedError, UnknownStreamError):
                return False
            except WalError as exc:  # the log is over its caps: hold the batch
                log.info("source %s: holding a batch: %s", self.key, exc)
                self._stop.wait(0.5)
                continue
            self.accepted += result.accepted
            self.rejected += result.rejected
            if result.errors and self.rejected == result.rejected:
                log.warning(
                    "source %s: rejected %d events, first: %s",
                    self.key,
                    result.rejected,
                    result.errors[0][1],
                )
            pending = [pending[i] for i in result.refused_indices] if result.refused else []
            if pending:
                self._stop.wait(0.05)
        return not pending

    def describe(self):
        mapping = {"map": self.mapper.describe()} if self.mapper is not None else {}
        return {
            **self.source.describe(),
            **mapping,
            "stream": str(self.key),
            "accepted": self.accepted,
            "rejected": self.rejected,
            "bad_payloads": self.bad_payloads,
            "fetch_errors": self.fetch_errors,
            "last_error": self.last_error,
        }
