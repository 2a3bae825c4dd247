"""An inflow whose accepted events go through the stream's write-ahead log first.

`offer()` logs each chunk it buffers (offsets are assigned and the chunk queued in one step, so
the buffer holds contiguous offsets in order) and returns once the log is as durable as
wal.durability says: only then does the receiver answer 200 or take the ZeroMQ frame. Frames
are version 2 (cep/protocol/frames.py): they carry this log's receiver id and the first
offset. `replay(after)` queues the logged events after an offset ahead of everything buffered
(new events wait behind it); `commit(offset)` lets the log delete what a checkpoint covers.

The highest offset handed to a spout socket is saved next to the log about once a second
(`mark-sent`); a restarted worker re-sends what the log holds after it, ahead of new events,
so events accepted but not yet sent when the worker died are not left behind (the spout drops
offsets it already emitted)."""

import collections
import logging
import time

import zmq

from cep.worker.inflow import SpoutConnection
from cep.protocol.frames import encode_batch
from receivers.wal.exceptions import LogFullError, WalError

log = logging.getLogger(__name__)
_UNENCODABLE = (OverflowError, ValueError, TypeError)
MARK_EVERY_S = 1.0


class LoggedSpoutConnection(SpoutConnection):
    """SpoutConnection + write-ahead log; see the module doc."""

    def __init__(self, *args, wal, receiver_id, control=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.wal, self.receiver_id, self.control = wal, receiver_id, control
        self._head = wal.next_offset  # offset of self._buf[0]
        self._replay = collections.deque()  # (first offset, events) sent before the buffer
        self._sent_mark = self._saved_at = -1
        self._resume()

    def _resume(self):
        """Queue what the log holds after the last saved sent mark (a restart)."""
        mark = self.wal.load_mark("sent")
        after = mark if mark is not None else self.wal.committed
        self._sent_mark = after
        if after + 1 < self._head:
            answer = self.replay(after)
            log.warning(
                "inflow %s/%s/%s: re-sending %d logged events after offset %d that "
                "may not have reached a spout before the restart",
                self.tenant,
                self.plan,
                self.stream,
                answer["events"],
                after,
            )

    # -- producer side --
    def offer(self, events, wait=0.0):
        """Log and buffer `events`; returns how many were refused (buffer full). Raises
        LogFullError (over wal.max_bytes / wal.max_age_s: back-pressure) when none was taken,
        WalError when the log could not write them (nothing acknowledged)."""
        deadline = time.monotonic() + wait
        done, taken, end = 0, 0, None  # events looked at, events logged and buffered
        with self._cond:
            while True:
                chunk = events[done : done + max(self.capacity - len(self._buf), 0)]
                if chunk:
                    try:
                        good, chunk_end = self._log(list(chunk))
                    except LogFullError:
                        if not done:
                            raise
                        break
                    done += len(chunk)
                    if good:
                        self._buf.extend(good)
                        taken, end = taken + len(good), chunk_end
                        self._cond.notify_all()
                left = deadline - time.monotonic()
                if done == len(events) or left <= 0 or self._stop.is_set():
                    break
                self._cond.wait(min(left, 0.05))
        if end is not None:
            self.wal.wait(end)  # outside the lock: one group commit serves many receivers
        refused = len(events) - taken
        if refused:
            self.stats["refused"] += refused
        return refused

    def _log(self, chunk):
        """(the events logged, their end offset); an event that does not encode is refused
        and counted (the receivers validate first; this is the last guard)."""
        try:
            return chunk, self.wal.append_nowait(chunk)[1]
        except _UNENCODABLE as exc:
            good = [e for e in chunk if _encodable(e)]
            self.stats["unencodable"] += len(chunk) - len(good)
            self._note(f"{len(chunk) - len(good)} event(s) not encodable, refused: {exc}")
            return good, (self.wal.append_nowait(good)[1] if good else None)

    # -- replay / commit (the spout's requests) --
    def replay(self, after):
        """Queue the logged events with offsets > `after` that were already handed to the
        socket, ahead of the buffer; returns {"first", "end", "events", "missing"}."""
        with self._cond:
            chunks, missing, expect = [], [], after + 1
            for first, events in self.wal.read(after, self._head):
                if first > expect:
                    missing.append([expect, first])
                chunks.append((first, events))
                expect = first + len(events)
            if expect < self._head:
                missing.append([expect, self._head])
            self._replay = collections.deque(chunks)
            self._cond.notify_all()
        count = sum(len(e) for _, e in chunks)
        self.stats["replayed"] += count
        if missing:
            log.error(
                "inflow %s/%s/%s: replay after %d: offsets %s are not in the log "
                "(committed, or corrupt records)",
                self.tenant,
                self.plan,
                self.stream,
                after,
                missing,
            )
        log.info(
            "inflow %s/%s/%s: replaying %d events after offset %d",
            self.tenant,
            self.plan,
            self.stream,
            count,
            after,
        )
        return {
            "first": chunks[0][0] if chunks else self._head,
            "end": self._head,
            "events": count,
            "missing": missing,
        }

    def commit(self, offset):
        return self.wal.commit(offset)

    def progress(self) -> dict:
        """Where the log stands: the highest offset appended so far and the highest a
        completed checkpoint committed (HTTP replies carry it: a sender's acknowledgement)."""
        return {
            "receiver_id": self.receiver_id,
            "appended": self.wal.next_offset - 1,
            "committed": self.wal.committed,
        }

    # -- sender thread --
    def _send_some(self):
        first, batch, replayed = self._next_batch()
        if not batch:
            return
        frame = encode_batch(self.stream, batch, self.receiver_id, first, self.control)
        try:
            self._sock.send(frame, zmq.NOBLOCK)
        except zmq.Again:  # not connected yet, or the spout is slow: keep the events
            self._put_back(first, batch, replayed)
            self._stop.wait(0.002)
            return
        self.stats["sent"] += len(batch)
        self.stats["frames"] += 1
        self._mark_sent(first + len(batch) - 1)

    def _mark_sent(self, offset):
        self._sent_mark = max(self._sent_mark, offset)
        now = time.monotonic()
        if now - self._saved_at >= MARK_EVERY_S:
            self._saved_at = now
            try:
                self.wal.save_mark("sent", self._sent_mark)
            except OSError as exc:
                self._note(f"saving the sent mark: {exc}")

    def _next_batch(self):
        with self._cond:
            if self._replay:
                first, events = self._replay.popleft()
                if len(events) > self.batch_size:
                    rest = events[self.batch_size :]
                    self._replay.appendleft((first + self.batch_size, rest))
                    events = events[: self.batch_size]
                return first, events, True
            if len(self._buf) < self.batch_size:
                self._cond.wait(self.flush_s)
            n = min(len(self._buf), self.batch_size)
            batch = [self._buf.popleft() for _ in range(n)]
            first = self._head
            self._head += n
            if n:
                self._cond.notify_all()  # room for producers waiting in offer()
        return first, batch, False

    def _put_back(self, first, batch, replayed):
        with self._cond:
            if replayed:
                self._replay.appendleft((first, batch))
            else:
                self._buf.extendleft(reversed(batch))
                self._head -= len(batch)

    def metrics(self):
        m = super().metrics()
        m.update(
            receiver_id=self.receiver_id,
            replayed=self.stats["replayed"],
            replay_queued=sum(len(e) for _, e in list(self._replay)),
            wal=self.wal.metrics(),
        )
        return m

    def stop(self, drain_timeout=2.0):
        try:
            super().stop(drain_timeout)
        finally:  # also for a connection never started (its plan failed to start)
            self._close_log()

    def _close_log(self):
        try:
            self.wal.save_mark("sent", self._sent_mark)
            self.wal.close()
        except (OSError, WalError) as exc:
            log.warning(
                "closing the write-ahead log of %s/%s/%s: %s",
                self.tenant,
                self.plan,
                self.stream,
                exc,
            )


def _encodable(event):
    try:
        encode_batch("", [event])
        return True
    except _UNENCODABLE:
        return False
