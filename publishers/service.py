"""The worker's CEP publisher service for one plan: a ROUTER socket that publisher bolts send
event batches to (PROTOCOL.md section 2), handed to the plan's SinkSet. A bolt sends
`[number, frame]` (8-byte little-endian number); once the sinks have taken the frame the
service answers `[number]`, which acknowledges every frame of that bolt up to it (the bolt
keeps a frame until then and sends it to the next worker if this one goes away). When the
plan's duplicate marks are kept on disk (publishers/marks_log.py), the answer waits until the
marks of the frame are durable: the service goes on taking frames meanwhile and answers them
together when the group commit is done (per bolt only the highest number).

The worker registers `host:port` with the manager's registry (kind `publisher`); frames that do
not decode, have another format version or name a stream without sinks are dropped, counted and
logged, and the socket keeps working."""

import collections
import logging
import threading

import zmq

from cep.security import curve
from cep.protocol.exceptions import BadFrameError
from cep.protocol.frames import decode_output
from cep.protocol.sockets import close_bound
from publishers.exceptions import PublisherError

log = logging.getLogger(__name__)
POLL_MS = 100
ACK_POLL_MS = 1  # while answers wait for the marks' group commit


def numbered(number, frame):
    """The message a publisher bolt sends: `[number, frame]`, the number 8 bytes little-endian
    (what the service acknowledges)."""
    return [int(number).to_bytes(8, "little"), frame]


class PublisherService:
    """Bind a ROUTER socket on `bind_host` and dispatch to `sink_set`; `port` is tried first
    (a restarted worker's previous port), else the OS picks a free one. `rcvhwm` bounds the
    frames queued for the sinks: when they are full, the publisher bolts wait (backpressure).
    `keys` (CURVE): only publisher bolts holding the cluster key may connect. Without CURVE,
    `token` (the plan's token, curve.plan_token) makes the port a PLAIN server that admits
    only the bolts of this plan; `domain` names the plan for the ZAP handler."""

    def __init__(
        self,
        sink_set,
        bind_host="0.0.0.0",
        port=0,
        context=None,
        rcvhwm=1000,
        keys=None,
        token=None,
        domain=None,
    ):
        self.sink_set = sink_set
        ctx = context or zmq.Context.instance()
        curve.start_authenticator(ctx, keys)
        self._sock = ctx.socket(zmq.ROUTER)
        self._sock.setsockopt(zmq.LINGER, 0)
        self._sock.setsockopt(zmq.RCVHWM, rcvhwm)
        curve.server(self._sock, keys)
        if keys is None and token:
            curve.plain_server(self._sock, ctx, f"publisher/{domain or sink_set.label}", token)
        self.port = self._bind(bind_host, port)
        self.frames = 0
        self.events = 0
        self.dropped_frames = 0
        self.controls = 0
        self._acks = collections.deque()  # (peer, number, marks ticket) not yet answered
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, daemon=True, name=f"publisher {sink_set.label}:{self.port}"
        )

    def _bind(self, host, port):
        """Bind `port` when given and free, else a free port the OS picks."""
        if port:
            try:
                self._sock.bind(f"tcp://{host}:{port}")
                return port
            except zmq.ZMQError as exc:
                log.warning(
                    "publisher service %s: port %d unavailable (%s); using a free one",
                    self.sink_set.label,
                    port,
                    exc,
                )
        return self._sock.bind_to_random_port(f"tcp://{host}")

    def start(self):
        self._thread.start()
        log.info("publisher service %s listening on port %d", self.sink_set.label, self.port)
        return self

    def stop(self):
        """Stop receiving, then close the sinks."""
        self._stop.set()
        self._thread.join(timeout=5)
        if not self._thread.is_alive() and not self._sock.closed:
            close_bound(self._sock)  # the thread died or never ran: the port is freed anyway
        self.sink_set.close()

    def _run(self):
        poller = zmq.Poller()
        poller.register(self._sock, zmq.POLLIN)
        try:
            while not self._stop.is_set():
                if poller.poll(ACK_POLL_MS if self._acks else POLL_MS):
                    self._receive(self._sock.recv_multipart(copy=True))
                if self._acks:
                    self._answer()
        finally:  # a failure keeps the socket for the supervisor's restart
            if self._stop.is_set():  # the port is free when stop() returns
                close_bound(self._sock)

    def _receive(self, parts):
        """`[peer, number, frame]` from a bolt: handled, then acknowledged once its marks are
        durable. A frame that does not decode is acknowledged too (sending it again would not
        make it decode)."""
        if len(parts) != 3 or len(parts[1]) != 8:
            self.dropped_frames += 1
            log.warning(
                "publisher service %s: a message of %d part(s) dropped (expected a "
                "number and a frame)",
                self.sink_set.label,
                len(parts),
            )
            return
        peer, number, frame = parts
        self._handle(frame)
        self._acks.append((peer, number, self.sink_set.dedup.ticket()))

    def _answer(self):
        """Acknowledge, in order, the frames whose marks are durable: per bolt the highest
        number (an acknowledgement covers every frame of that bolt up to it)."""
        durable, acks, last = self.sink_set.dedup.durable(), self._acks, {}
        while acks and acks[0][2] <= durable:
            peer, number, _ = acks.popleft()
            last[peer] = number
        for peer, number in last.items():
            try:
                self._sock.send_multipart([peer, number], zmq.NOBLOCK)
            except zmq.ZMQError:
                pass  # the bolt went away (or its pipe is full): a later one covers it

    def _handle(self, frame):
        try:
            stream, events, ident = decode_output(frame)
            if stream is None:  # a publisher bolt's start or commit notice
                self.sink_set.control(ident)
                self.controls += 1
                return
            self.sink_set.dispatch(stream, events, ident)
        except (BadFrameError, PublisherError) as exc:
            self.dropped_frames += 1
            log.warning("publisher service %s: frame dropped: %s", self.sink_set.label, exc)
            return
        self.frames += 1
        self.events += len(events)

    def metrics(self):
        dups = self.sink_set.duplicates()
        return {
            "port": self.port,
            "frames": self.frames,
            "events": self.events,
            "dropped_frames": self.dropped_frames,
            "duplicates": sum(dups.values()),
            **self.sink_set.gaps(),
            **self.sink_set.fences.metrics(),
            "controls": self.controls,
            "committed": self.sink_set.committed,
            "marks": self.sink_set.marks(),
            "publishers": dict(self.sink_set.publishers),
            "streams": self.sink_set.metrics(),
        }
