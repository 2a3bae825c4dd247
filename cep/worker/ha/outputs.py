"""Output sequences and the passive's output queue.

Both nodes number the outputs of each exported stream alike: the n-th event the engine emits
into a stream has sequence n (from 1), on both nodes, because both run the same plan over the
same input in the same order. The active writes each batch to the sinks and remembers the
highest sequence written (`published`). The passive queues its batches instead (bounded) and
drops from the queue what the active reports as published (`trim`, every ha.sync_interval).
When the passive takes over it writes the queue first (`promote`): no output is lost; what the
old active wrote after its last report is written again (a duplicate), at most one sync
interval's worth, and counted.

    ledger = OutputLedger(["Out"], max_events=1000)
    ledger.emit("Out", events, publish=sinks.dispatch, active=False)   # queued
    ledger.trim({"Out": 40}); ledger.promote(sinks.dispatch, dup_before=t)
"""

import collections
import time


class OutputLedger:
    """Per exported stream: events emitted so far (`seq`), published so far, the queue."""

    def __init__(self, streams, max_events):
        self.max_events = max_events
        self.seq = {s: 0 for s in streams}
        self.published = {s: 0 for s in streams}  # this node wrote up to here
        self.peer_published = {s: 0 for s in streams}  # the active reported up to here
        self._queue = collections.deque()  # [stream, first seq, events, monotonic time]
        self.queued = 0
        self.overflow = 0  # outputs dropped because the queue was full
        self.republished = 0  # outputs written from the queue at a take-over
        self.duplicates = 0  # of those, the ones the old active may have written too

    def emit(self, stream, events, publish, active):
        """Number a batch; write it (active) or queue it (passive)."""
        first = self.seq[stream] + 1
        self.seq[stream] += len(events)
        if active:
            publish(stream, events)
            self.published[stream] = self.seq[stream]
            return
        self._queue.append([stream, first, events, time.monotonic()])
        self.queued += len(events)
        while self.queued > self.max_events and self._queue:
            dropped = self._queue.popleft()
            self.queued -= len(dropped[2])
            self.overflow += len(dropped[2])

    def trim(self, published):
        """Drop queued outputs up to the active's published sequence of each stream."""
        for stream, upto in published.items():
            if stream in self.peer_published and upto > self.peer_published[stream]:
                self.peer_published[stream] = upto
        kept = collections.deque()
        for entry in self._queue:
            stream, first, events, t = entry
            skip = self.peer_published.get(stream, 0) - first + 1
            if skip >= len(events):
                self.queued -= len(events)
                continue
            if skip > 0:
                self.queued -= skip
                entry = [stream, first + skip, events[skip:], t]
            kept.append(entry)
        self._queue = kept

    def promote(self, publish, dup_before):
        """Write the queue (what the active did not report as published), oldest first;
        outputs queued before monotonic time `dup_before` count as possible duplicates."""
        self.trim({})
        while self._queue:
            stream, first, events, t = self._queue.popleft()
            self.queued -= len(events)
            publish(stream, events)
            self.published[stream] = max(self.published[stream], first + len(events) - 1)
            self.republished += len(events)
            if t <= dup_before:
                self.duplicates += len(events)
        for stream, seq in self.seq.items():
            self.published[stream] = max(self.published[stream], seq)

    def reset(self, seq, published):
        """After a state sync: the active's sequences; the queue starts empty."""
        self._queue.clear()
        self.queued = 0
        for stream in self.seq:
            self.seq[stream] = int(seq.get(stream, 0))
            self.published[stream] = self.peer_published[stream] = int(published.get(stream, 0))

    def describe(self):
        return {
            "seq": dict(self.seq),
            "published": dict(self.published),
            "peer_published": dict(self.peer_published),
            "queue_events": self.queued,
            "queue_bound": self.max_events,
            "overflow": self.overflow,
            "republished": self.republished,
            "duplicates": self.duplicates,
        }
