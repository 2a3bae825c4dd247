"""File source: events from a JSON-lines file, read in batches (bytewax's partition shape).

Each line is one event in any form the HTTP receiver takes, typically
`{"stream": "S", "timestamp": 1700000000000, "data": [...]}` as `cep run` reads and prints them.
`FileSource` is the partition (next_batch / snapshot / close); `SourcePump` drives one into an
IngestRouter from a thread. A line that is not JSON is rejected with its line number.
With `roots` (the host policy's file roots of the tenant, cep.policy) the path must lie under
one of them and is opened without following a final symlink."""

import json
import logging
import threading
import time

from cep.policy import PolicyViolation, open_confined
from receivers.exceptions import SourceConfigError, SourceReadError
from receivers.validation import StreamKey
from receivers.wal.exceptions import WalClosedError, WalError

log = logging.getLogger(__name__)


class FileSource:
    """Read a JSON-lines file from a byte offset; with `tail`, keep waiting for new lines."""

    def __init__(self, path, batch_size=1000, tail=False, resume_state=None, roots=None, raw=False):
        """`raw`: give each line as bytes (for a source's @map) instead of decoded JSON."""
        self.path = str(path)
        self.raw = raw
        self.batch_size = batch_size
        self.tail = tail
        self.bad_lines = []  # (line number, reason), most recent last, bounded
        self._offset, self._line = resume_state or (0, 0)
        try:
            self._fh = (
                open(self.path, "rb")
                if roots is None
                else open_confined(self.path, tuple(roots), "r")
            )
        except PolicyViolation as exc:
            raise SourceConfigError(f"file source: {exc}") from None
        except OSError as exc:
            raise SourceReadError(f"file source {self.path}: cannot open: {exc}") from None
        self._fh.seek(self._offset)
        self.done = False

    def next_batch(self):
        """Up to batch_size decoded events; [] when nothing new; sets `done` at EOF (no tail)."""
        events = []
        while len(events) < self.batch_size:
            pos = self._fh.tell()
            line = self._fh.readline()
            if not line or not line.endswith(b"\n") and self.tail:
                self._fh.seek(pos)  # a partial last line: wait for the rest when tailing
                self.done = not self.tail
                break
            self._offset, self._line = self._fh.tell(), self._line + 1
            if line.strip():
                if self.raw:
                    events.append(line.rstrip(b"\r\n"))
                else:
                    self._decode(line, events)
        return events

    def _decode(self, line, events):
        try:
            events.append(json.loads(line))
        except ValueError as exc:
            self.bad_lines.append((self._line, f"line {self._line} is not JSON: {exc}"))
            del self.bad_lines[:-100]
            log.warning("file source %s: line %d is not JSON: %s", self.path, self._line, exc)

    def snapshot(self):
        """(byte offset, line number) to resume from."""
        return self._offset, self._line

    def close(self):
        self._fh.close()


class SourcePump:
    """Drive a partition (next_batch/close) into router.ingest_json(key, ...) on a thread;
    with `mapper` (cep.mapping) each item is a message it decodes, and the pairs go to
    router.ingest_pairs."""

    def __init__(self, source, router, key, idle_sleep=0.05, mapper=None):
        self.source = source
        self.mapper = mapper
        self.router = router
        self.key = StreamKey(*key)
        self.idle_sleep = idle_sleep
        self.sent = 0
        self.wal_waits = 0  # retries of a batch held while the stream's log was full
        self.result = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"source {self.key}", daemon=True)

    def start(self):
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        self._thread.join(timeout=5)

    def join(self, timeout=None):
        self._thread.join(timeout)

    def _ingest_held(self, batch):
        """While the stream's write-ahead log is over its caps, hold the batch and read no
        further (back-pressure, not loss)."""
        if self.mapper is not None:
            batch = self.mapper.decode(batch).pairs
            if not batch:
                return None
        while True:
            try:
                if self.mapper is not None:
                    return self.router.ingest_pairs(self.key, batch, wait=60.0)
                return self.router.ingest_json(self.key, batch, wait=60.0)
            except WalClosedError:
                raise
            except WalError as exc:
                self.wal_waits += 1
                if self.wal_waits % 20 == 1:
                    log.warning("source %s: holding a batch: %s", self.key, exc)
                if self._stop.wait(0.5):
                    raise

    def _run(self):
        try:
            while not self._stop.is_set():
                batch = self.source.next_batch()
                if batch:
                    self._ingest(batch)
                elif getattr(self.source, "done", False):
                    break
                else:
                    time.sleep(self.idle_sleep)
        finally:
            self.source.close()

    def _ingest(self, batch):
        try:
            result = self._ingest_held(batch)
        except Exception:  # keep reading: one failed batch must not end the source
            log.exception("source %s: batch of %d events failed", self.key, len(batch))
            return
        if result is None:  # the map read no event of the batch (counted by the mapper)
            return
        self.sent += result.accepted
        self.result = result if self.result is None else self.result.add(result)
