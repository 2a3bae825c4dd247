"""The asynchronous part of a snapshot (Flink's asynchronous phase): compress, checksum and
write a packed state on a background thread while the task goes on processing.

The task thread packs the state (the copy: ``store.pack``), forwards the barrier and hands
the bytes to ``submit()``; the writer seals and stores them in submission order and queues
the finished report. ZeroMQ sockets belong to the task thread, so the task thread sends the
acks itself: ``done()`` returns the finished reports (call it from the task loop). A write
that fails is reported in its ack (``error``: the checkpoint fails, the task carries on);
nothing here raises into the task.
"""

import logging
import queue
import threading
import time

from topology.checkpoint.store import seal

log = logging.getLogger(__name__)


class SnapshotWriter:
    """One daemon thread per instance writing sealed blobs to ``store``, until ``close()``."""

    def __init__(self, store, task, label=""):
        self.store, self.task, self.label = store, task, label
        self._jobs = queue.Queue()
        self._done = queue.Queue()
        self._thread = None
        self.written = self.failed = 0

    def submit(self, cid, packed, report, started):
        """Write ``packed`` for checkpoint ``cid`` in the background; ``report`` (the ack,
        without ``bytes``) comes back from ``done()`` once it is stored."""
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(
                target=self._run, daemon=True, name=f"checkpoint-writer {self.label}"
            )
            self._thread.start()
        self._jobs.put((cid, packed, report, started))

    @property
    def busy(self):
        return self._jobs.unfinished_tasks > 0

    def done(self):
        """Reports of the writes finished since the last call, in checkpoint order."""
        out = []
        while True:
            try:
                out.append(self._done.get_nowait())
            except queue.Empty:
                return out

    def flush(self, timeout=10.0):
        """Wait until every submitted write finished (close, tests); True if they did."""
        deadline = time.monotonic() + timeout
        while self.busy and time.monotonic() < deadline:
            time.sleep(0.005)
        return not self.busy

    def close(self, timeout=5.0):
        """Finish the submitted writes, then end the thread (a later submit starts another);
        True if the writes finished."""
        finished = self.flush(timeout)
        if self._thread is not None and self._thread.is_alive():
            self._jobs.put(None)  # after the pending writes: the thread ends once they are done
            self._thread.join(timeout)
        return finished

    def _run(self):
        while True:
            job = self._jobs.get()
            try:
                if job is None:
                    return
                self._write(*job)
            finally:
                self._jobs.task_done()

    def _write(self, cid, packed, report, started):
        began = time.perf_counter()
        try:
            report["bytes"] = self.store.write_blob(cid, self.task, seal(packed))
            self.written += 1
        except Exception as exc:  # noqa: BLE001 - reported: the checkpoint fails, not the task
            self.failed += 1
            log.error("%s checkpoint %s: write failed: %s", self.label, cid, exc)
            report["error"] = f"{type(exc).__name__}: {exc}"
        report["write_ms"] = round((time.perf_counter() - began) * 1000, 2)
        report["duration_ms"] = round((time.perf_counter() - started) * 1000, 2)
        self._done.put(report)
