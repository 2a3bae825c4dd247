"""Forward mode, active side: every input batch the active took goes to the passive, in order,
before the receiver answers the client. One sender thread sends everything queued in one
request (group commit); `ticket()` waits until the passive took the batch, at most
ha.forward_timeout_s. When the passive does not take a batch within that time the active
detaches it (goes on alone, no more waiting) and the passive resyncs: the heartbeat tells it
which plans are attached."""

import collections
import logging
import threading
import time

from cep.worker.ha.exceptions import PeerError

log = logging.getLogger(__name__)
MAX_EVENTS_PER_SEND = 50_000


class Forwarder:
    """Ordered, acknowledged forwarding of input batches to the passive."""

    def __init__(self, client, timeout_s):
        self.client, self.timeout_s = client, timeout_s
        self._cv = threading.Condition()
        self._queue = collections.deque()  # [key, seq, stream, events]
        self.attached = {}  # plan key -> last seq the passive took
        self.sent_events = self.sent_batches = self.detaches = 0
        self.last_error = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="ha-forwarder")

    def start(self):
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        with self._cv:
            self._cv.notify_all()
        self._thread.join(timeout=5)

    def attach(self, key, seq):
        """Forward plan `key`'s batches after `seq` (called under the plan's lock)."""
        with self._cv:
            self.attached[key] = seq
            self._queue = collections.deque(x for x in self._queue if x[0] != key)

    def detach(self, key):
        """Stop forwarding plan `key` (removed, or replaced by a new version)."""
        with self._cv:
            self.attached.pop(key, None)
            self._queue = collections.deque(x for x in self._queue if x[0] != key)
            self._cv.notify_all()

    def detach_all(self, reason):
        with self._cv:
            if self.attached:
                self.detaches += 1
                log.warning("HA forwarding stopped (%s); the passive must resync", reason)
            self.attached.clear()
            self._queue.clear()
            self._cv.notify_all()

    def submit(self, key, seq, stream, events):
        """Queue one batch (under the plan's lock, so in input order); a waiter or None."""
        with self._cv:
            if key not in self.attached:
                return None
            self._queue.append([key, seq, stream, events])  # msgpack packs the tuples as arrays
            self._cv.notify_all()
        return lambda: self._wait(key, seq)

    def _wait(self, key, seq):
        with self._cv:
            self._cv.wait_for(
                lambda: self.attached.get(key, seq) >= seq or self._stop.is_set(),
                timeout=self.timeout_s + 1.0,
            )

    def _take(self):
        with self._cv:
            self._cv.wait_for(lambda: self._queue or self._stop.is_set(), timeout=0.5)
            items, n = [], 0
            while self._queue and n < MAX_EVENTS_PER_SEND:
                items.append(self._queue.popleft())
                n += len(items[-1][3])
            return items

    def _run(self):
        while not self._stop.is_set():
            items = self._take()
            if items:
                self._send(items)

    def _send(self, items):
        first_failure = None
        while not self._stop.is_set():
            try:
                self.client.forward(items)
                break
            except PeerError as exc:
                self.last_error = str(exc)
                first_failure = first_failure or time.monotonic()
                if time.monotonic() - first_failure >= self.timeout_s:
                    self.detach_all(str(exc))
                    return
                time.sleep(0.05)
        with self._cv:
            for key, seq, _, events in items:
                if key in self.attached:
                    self.attached[key] = max(self.attached[key], seq)
                self.sent_events += len(events)
            self.sent_batches += len(items)
            self._cv.notify_all()

    def describe(self):
        with self._cv:
            return {
                "attached": sorted(self.attached),
                "queued_batches": len(self._queue),
                "sent_events": self.sent_events,
                "sent_batches": self.sent_batches,
                "detaches": self.detaches,
                "last_error": self.last_error,
            }
