"""One imported stream's inflow over the NATS JetStream transport (`topology.transport: nats`).

`offer(events)` buffers the events and waits until JetStream has stored them: the receiver
answers only then, so an accepted event survives the worker's loss without a write-ahead log
(it is in the stream; the spout's durable consumer reads it). While the server is not
reachable every event is refused (the receivers answer 503, the client retries), so nothing
waits in this process's memory for a server that may never come back.

A sender thread takes what is buffered, encodes it as event frames of up to `batch_size`
events (cep/protocol/frames.py, as the ZeroMQ inflow sends) and publishes them on
`cep.in.<tenant>.<plan>.<stream>` (connectors/nats_transport.py), each with a `Nats-Msg-Id`
of this inflow's start and the frame's number: a frame re-published after a failed
confirmation keeps its id, so JetStream stores it once.

When the confirmation does not come within confirm_timeout (the server went away in the
middle of an offer), the offer fails (the receiver answers 503) and withdraws its events the
sender has not taken yet, so a client that sends them again does not have them twice; only
those already handed to the server (at most one round) may be stored too."""

import collections
import logging
import threading
import time
import uuid

from cep.protocol.frames import encode_batch
from connectors.aio import LoopThread
from connectors.connections import shown
from connectors.nats_transport import (
    MSG_ID,
    SAMPLE_S,
    connect,
    ensure_stream,
    inflow_filter,
    inflow_stream,
    inflow_subject,
    stream_report,
)
from receivers.wal.exceptions import WalError

log = logging.getLogger(__name__)
ROUND_FRAMES = 64  # frames published before their confirmations are awaited together
_WITHDRAWN = object()  # a buffered event whose offer failed: not published


class NatsInflowError(WalError):
    """JetStream did not confirm the events in time: nothing of them counts as accepted (the
    receivers answer as they do when a write-ahead log cannot take events)."""


class NatsInflow:
    """Bounded buffer + sender thread for one (tenant, plan, stream); see the module doc."""

    def __init__(
        self,
        url: str,
        tenant: int,
        plan: str,
        stream: str,
        client: str,
        capacity: int = 100000,
        batch_size: int = 1000,
        reconnect_interval: float = 1.0,
        confirm_timeout: float = 10.0,
    ):
        self.url, self.tenant, self.plan, self.stream = url, tenant, plan, stream
        self.client = client
        self.capacity, self.batch_size = capacity, batch_size
        self.reconnect_interval, self.confirm_timeout = reconnect_interval, confirm_timeout
        self.subject = inflow_subject(tenant, plan, stream)
        self.js_stream = inflow_stream(tenant, plan)
        self.id_prefix = f"{client}:{uuid.uuid4().hex[:12]}:{stream}:"
        self._buf = collections.deque()
        self._retry = []  # (msg id, frame, events) published without a confirmation
        self._frames = 0  # frames numbered so far (message ids)
        self._offered = self._confirmed = 0  # events buffered / done (stored or withdrawn), ever
        self._popped = 0  # events the sender took from the buffer, ever
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self.loop = self.nc = self.js = None
        self.connected = False
        self.stats = collections.Counter()
        self.last_error = None
        self.jetstream = None  # the inflow stream's last stream_report (every SAMPLE_S)
        self._next_sample = 0.0
        self._thread = threading.Thread(
            target=self._run, daemon=True, name=f"nats inflow {tenant}/{plan}/{stream}"
        )

    # -- producer side (receiver threads) --
    def offer(self, events, wait: float = 0.0) -> int:
        """Buffer `events` (waiting up to `wait` s for room) and return once JetStream stored
        them; returns how many were refused (no room, or no server). NatsInflowError when
        the confirmation did not come within confirm_timeout."""
        if not events:
            return 0
        if not self.connected:
            self.stats["refused"] += len(events)
            return len(events)
        deadline = time.monotonic() + wait
        taken, chunks = 0, []  # (position, length) of this call's chunks in the buffer
        with self._cond:
            while True:
                chunk = events[taken : taken + max(self.capacity - len(self._buf), 0)]
                if chunk:
                    chunks.append((self._offered, len(chunk)))
                self._buf.extend(chunk)
                taken += len(chunk)
                self._offered += len(chunk)
                self._cond.notify_all()
                left = deadline - time.monotonic()
                if taken == len(events) or left <= 0 or self._stop.is_set():
                    break
                self._cond.wait(min(left, 0.05))
            end = self._offered
            until = time.monotonic() + self.confirm_timeout
            while self._confirmed < end:
                left = until - time.monotonic()
                if left <= 0:
                    withdrawn = self._withdraw(chunks)
                    raise NatsInflowError(
                        f"NATS transport {shown(self.url)}: JetStream did not confirm "
                        f"{self.subject} within {self.confirm_timeout} s ({self.last_error}); "
                        f"{withdrawn} of the {taken} events were withdrawn, "
                        f"{taken - withdrawn} may be stored"
                    )
                self._cond.wait(min(left, 0.05))
        refused = len(events) - taken
        if refused:
            self.stats["refused"] += refused
        return refused

    def _withdraw(self, chunks) -> int:
        """Mark this call's events the sender has not taken yet as withdrawn (it skips them,
        counting them as done); returns how many (call with the lock held)."""
        withdrawn = 0
        for position, length in chunks:
            for i in range(max(position - self._popped, 0), position + length - self._popped):
                if self._buf[i] is not _WITHDRAWN:
                    self._buf[i] = _WITHDRAWN
                    withdrawn += 1
        self.stats["withdrawn"] += withdrawn
        return withdrawn

    @property
    def buffered(self) -> int:
        return len(self._buf)

    def start(self):
        self._thread.start()
        return self

    def stop(self, drain_timeout: float = 2.0):
        deadline = time.monotonic() + drain_timeout
        while (self._buf or self._retry) and self.connected and time.monotonic() < deadline:
            time.sleep(0.01)
        self._stop.set()
        with self._cond:
            self._cond.notify_all()
        self._thread.join(timeout=5)
        self._close()

    def metrics(self) -> dict:
        return {
            "stream": self.stream,
            "connected": self.connected,
            "endpoint": f"{shown(self.url)} {self.subject}",
            "transport": "nats",
            "buffered": len(self._buf),
            "capacity": self.capacity,
            "sent": self.stats["sent"],
            "published": self.stats["published"],  # events handed to JetStream, re-sends too
            "acked": self.stats["sent"],  # events JetStream confirmed it stored
            "jetstream": self.jetstream,
            "frames": self.stats["frames"],
            "refused": self.stats["refused"],
            "reconnects": self.stats["reconnects"],
            "duplicates": self.stats["duplicates"],
            "unencodable": self.stats["unencodable"],
            "withdrawn": self.stats["withdrawn"],
            "last_error": self.last_error,
        }

    # -- sender thread --
    def _run(self):
        while not self._stop.is_set():
            if self.nc is None and not self._connect():
                self._stop.wait(self.reconnect_interval)
                continue
            self.connected = self.nc.is_connected
            if time.monotonic() >= self._next_sample:
                self._sample()
            if not self._send_round():
                self._stop.wait(0.05)

    def _sample(self):
        """Read what the inflow stream holds and how far the spouts' consumers are."""
        self._next_sample = time.monotonic() + SAMPLE_S
        try:
            self.jetstream = self.loop.run(stream_report(self.js, self.js_stream, "cep_in_"), 5)
        except Exception as exc:  # noqa: BLE001 - a report is not worth failing the inflow
            log.debug("inflow %s: stream report failed: %s", self.subject, exc)

    def _connect(self) -> bool:
        if self.loop is None:
            self.loop = LoopThread(f"nats inflow {self.subject}")
        try:
            self.loop.run(self._open(), 15)
        except Exception as exc:  # noqa: BLE001 - any client error: try again later
            self.last_error = f"connect: {type(exc).__name__}: {exc}"
            return False
        self.connected = True
        log.info(
            "inflow %s/%s/%s publishes to %s on %s",
            self.tenant,
            self.plan,
            self.stream,
            self.subject,
            shown(self.url),
        )
        return True

    async def _open(self):
        nc = await connect(self.url, f"cep inflow {self.client} {self.subject}")
        try:
            js = nc.jetstream(publish_async_max_pending=4 * ROUND_FRAMES)
            await ensure_stream(js, self.js_stream, [inflow_filter(self.tenant, self.plan)])
        except BaseException:
            await nc.close()
            raise
        self.nc, self.js = nc, js

    def _send_round(self) -> bool:
        """Publish what is buffered (up to ROUND_FRAMES frames) and await the confirmations;
        False when there was nothing to send or the round failed."""
        with self._cond:
            if not self._retry and not self._buf:
                self._cond.wait(0.05)
            frames, skipped = self._retry, 0
            self._retry = []
            while self._buf and len(frames) < ROUND_FRAMES:
                n = min(len(self._buf), self.batch_size)
                events = [self._buf.popleft() for _ in range(n)]
                self._popped += n
                kept = [e for e in events if e is not _WITHDRAWN]
                skipped += n - len(kept)
                if kept:
                    self._frames += 1
                    frames.append((f"{self.id_prefix}{self._frames}", None, kept))
            if skipped:  # withdrawn events: done without publishing
                self._confirmed += skipped
                self._cond.notify_all()
        if not frames:
            return False
        self.stats["published"] += sum(len(events) for _, _, events in frames)
        frames = [
            (mid, frame if frame is not None else self._encode(events), events)
            for mid, frame, events in frames
        ]
        try:
            dups = self._publish_round(frames)
        except Exception as exc:  # noqa: BLE001 - the server or the connection failed
            self.last_error = f"publish: {type(exc).__name__}: {exc}"
            self.stats["reconnects"] += 1
            log.warning(
                "inflow %s/%s/%s: %s; %d frame(s) are published again",
                self.tenant,
                self.plan,
                self.stream,
                self.last_error,
                len(frames),
            )
            with self._cond:
                self._retry = frames + self._retry
            self.connected = bool(self.nc is not None and self.nc.is_connected)
            return False
        n = sum(len(events) for _, _, events in frames)
        self.stats["sent"] += n
        self.stats["frames"] += len(frames)
        self.stats["duplicates"] += dups
        with self._cond:
            self._confirmed += n
            self._cond.notify_all()
        return True

    def _publish_round(self, frames) -> int:
        """Publish (msg id, frame, events) items; how many JetStream called duplicates."""
        return self.loop.run(self._publish(frames), self.confirm_timeout + 5)

    async def _publish(self, frames) -> int:
        import asyncio

        futures = [
            await self.js.publish_async(
                self.subject, frame, headers={MSG_ID: mid}, wait_stall=self.confirm_timeout
            )
            for mid, frame, _ in frames
        ]
        acks = await asyncio.wait_for(asyncio.gather(*futures), self.confirm_timeout)
        return sum(1 for a in acks if a.duplicate)

    def _encode(self, events) -> bytes:
        """The frame of `events`; an event that does not encode (the receivers reject such
        events; this is the last guard) is dropped, counted and logged."""
        try:
            return encode_batch(self.stream, events)
        except (OverflowError, ValueError, TypeError) as exc:
            good = []
            for event in events:
                try:
                    encode_batch(self.stream, [event])
                    good.append(event)
                except (OverflowError, ValueError, TypeError):
                    self.stats["unencodable"] += 1
            self.last_error = f"{len(events) - len(good)} event(s) dropped, not encodable: {exc}"
            log.error("inflow %s/%s/%s: %s", self.tenant, self.plan, self.stream, self.last_error)
            return encode_batch(self.stream, good)

    def _close(self):
        self.connected = False
        if self.loop is None:
            return
        try:
            if self.nc is not None and not self.nc.is_closed:
                self.loop.run(self.nc.drain(), 10)
        except Exception:  # noqa: BLE001 - closing must go on
            log.debug("inflow %s: close failed", self.subject, exc_info=True)
        self.loop.close()
        self.loop = self.nc = self.js = None
