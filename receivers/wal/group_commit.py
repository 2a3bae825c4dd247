"""Group commit: one writer thread per log takes every record appended since its last round,
writes them with one write() per segment and, for durability `fsync`, one fdatasync(); callers
wait for the round that holds their record (fsync: synced, none: not at all). With
durability `os` the log writes in the appending thread instead (a write() is cheap, and a
hand-off to this thread would cost a GIL switch per batch) and only marks what it wrote.

A round that fails (disk full, I/O error) fails the waiters of its records with the reason
(their events are not acknowledged), is counted and logged, and the thread carries on: it never
dies silently."""

import logging
import threading
import time

from receivers.wal.exceptions import WalClosedError, WalError

log = logging.getLogger(__name__)


class GroupCommit:
    """Writer thread: `submit(item, end_offset)`, `wait(end_offset)`; `write(items)` and
    `sync()` are the log's callbacks (items are (bytes, first, end, append_ms) tuples)."""

    def __init__(self, write, sync, durability, name, linger_s=0.2):
        self._write, self._sync = write, sync
        self.durability = durability
        self.linger_s = linger_s if durability == "none" else 0.0  # none: batch more per write
        self._pending = []
        self._cond = threading.Condition()
        self.written = self.synced = 0  # end offsets (exclusive) written / synced
        self.failed = {}  # end offset -> error message, for waiters of a failed round
        self.errors, self.rounds, self.last_error = 0, 0, None
        self._closed = False
        self._thread = threading.Thread(target=self._run, daemon=True, name=f"wal {name}")

    def start(self, next_offset):
        self.written = self.synced = next_offset
        self._thread.start()
        return self

    def submit(self, item, end_offset):
        with self._cond:
            if self._closed:
                raise WalClosedError("the log is closed")
            self._pending.append((item, end_offset))
            self._cond.notify_all()

    def mark_written(self, end_offset):
        """The log wrote up to end_offset itself (durability os)."""
        with self._cond:
            self.written = end_offset
            self._cond.notify_all()

    def wait(self, end_offset, level=None, timeout=30.0):
        """Block until offsets below `end_offset` reached `level` (default: the durability);
        raises WalError if their round failed or the wait timed out."""
        level = level or self.durability
        if level == "none":
            return
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                if end_offset in self.failed:
                    why = self.failed.pop(end_offset)
                    raise WalError(f"write-ahead log write failed: {why}")
                done = self.synced if level == "fsync" else self.written
                if done >= end_offset:
                    return
                left = deadline - time.monotonic()
                if left <= 0 or (self._closed and not self._thread.is_alive()):
                    raise WalError(f"write-ahead log did not write within {timeout} s")
                self._cond.wait(min(left, 0.5))

    def flush(self, timeout=30.0):
        """Wait until everything submitted so far is written to the OS."""
        with self._cond:
            end = self._pending[-1][1] if self._pending else self.written
        self.wait(end, level="os", timeout=timeout)

    def close(self):
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._thread.join(timeout=10)

    def _run(self):
        while True:
            with self._cond:
                while not self._pending and not self._closed:
                    self._cond.wait(1.0)
                if not self._pending and self._closed:
                    return
            if self.linger_s and not self._closed:
                time.sleep(self.linger_s)
            with self._cond:
                batch, self._pending = self._pending, []
            self._round(batch)

    def _round(self, batch):
        end = batch[-1][1]
        try:
            self._write([item for item, _ in batch])
            synced = self.durability == "fsync"
            if synced:
                self._sync()
        except Exception as exc:  # noqa: BLE001 - any failure is reported to the waiters
            self.errors += 1
            self.last_error = f"{type(exc).__name__}: {exc}"
            log.error(
                "write-ahead log %s: a write of %d records failed: %s",
                self._thread.name,
                len(batch),
                self.last_error,
            )
            with self._cond:
                for _, e in batch:
                    self.failed[e] = self.last_error
                self._cond.notify_all()
            return
        with self._cond:
            self.rounds += 1
            self.written = end
            if synced:
                self.synced = end
            self._cond.notify_all()
