"""ZeroMQ msgpack receiver for high volume: a PULL socket taking batches of events.

Wire format: a multipart message `[key, payload]`, where key is `tenant/plan/stream` (UTF-8)
and payload is msgpack of an array of `[timestamp_ms | nil, [value, ...]]` pairs. A receiver
bound for one stream (a `@source(type='zmq')`) also takes single-frame `[payload]` messages.
PULL has no reply: rejected events and undecodable messages are counted and logged. While a
stream's downstream buffer is full the receiver stops reading (up to `block_s` per batch), so
ZeroMQ's high-water marks push back to the sender instead of events being refused."""

import logging
import threading

import zmq

from cep.protocol.exceptions import BadFrameError
from cep.protocol.frames import decode_pairs, encode_pairs
from cep.protocol.sockets import close_bound
from cep.security import curve
from receivers.exceptions import BadPayloadError, ReceiverError
from receivers.validation import StreamKey
from receivers.wal.exceptions import WalClosedError, WalError

log = logging.getLogger(__name__)
POLL_MS = 100
WAL_RETRY_S = 0.5  # while a stream's write-ahead log is over its caps, retry this often
BURST_MESSAGES = 256  # messages read before their events are routed together
BURST_EVENTS = 20000  # ... or this many events


def parse_key(frame):
    """A StreamKey from a `tenant/plan/stream` frame."""
    parts = frame.decode("utf-8", "replace").split("/")
    if len(parts) != 3 or not all(parts):
        raise BadPayloadError(f"key frame must be 'tenant/plan/stream', got {frame[:80]!r}")
    return StreamKey(*parts)


class ZmqReceiver:
    """Bind a PULL socket at `url` (tcp://host:0 picks a port) and route batches to a router."""

    def __init__(
        self,
        router,
        url="tcp://127.0.0.1:0",
        default_key=None,
        context=None,
        block_s=60.0,
        keys=None,
        mapper=None,
    ):
        """`mapper` (cep.mapping): the payload frame is one message in its format, for the
        default key's stream only."""
        self.router = router
        self.mapper = mapper
        self.block_s = block_s  # how long a full downstream may stall reading (back-pressure)
        self.default_key = StreamKey(*default_key) if default_key else None
        self._ctx = context or zmq.Context.instance()
        curve.start_authenticator(self._ctx, keys)
        self._sock = self._ctx.socket(zmq.PULL)
        self._sock.setsockopt(zmq.LINGER, 0)
        self._sock.setsockopt(zmq.RCVHWM, 10000)
        # CURVE: senders need the cluster public key as server key and a key pair
        # that is the cluster's or listed in <curve dir>/clients/ (ZAP domain `ingest`)
        curve.server(self._sock, keys, domain=curve.INGEST)
        self.url = _bind(self._sock, url)
        self.bad_messages = 0
        self.wal_waits = 0  # retries of a frame held while its stream's log was full
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"zmq-recv {self.url}", daemon=True)

    def start(self):
        self._thread.start()
        log.info("ZeroMQ receiver bound at %s", self.url)
        return self

    def stop(self):
        self._stop.set()
        self._thread.join(timeout=5)
        if not self._thread.is_alive() and not self._sock.closed:
            close_bound(self._sock)  # the thread died or never ran: the port is freed anyway

    def _run(self):
        poller = zmq.Poller()
        poller.register(self._sock, zmq.POLLIN)
        try:
            while not self._stop.is_set():
                if poller.poll(POLL_MS):
                    self._handle_burst()
        finally:  # a failure keeps the socket for the supervisor's restart
            if self._stop.is_set():  # the port is free when stop() returns
                close_bound(self._sock)

    def _handle_burst(self):
        """Take the messages already queued (up to BURST_MESSAGES, or BURST_EVENTS events),
        then route the events of consecutive messages of one stream in one call: a
        downstream that answers only once the events are durable (a write-ahead log with
        fsync, the NATS transport's JetStream confirmation) serves every message that
        arrived while it worked in its next round, instead of one message per round."""
        runs, events = [], 0  # [key, pairs] of consecutive messages of one stream
        for i in range(BURST_MESSAGES):
            try:
                frames = self._sock.recv_multipart(zmq.NOBLOCK if i else 0, copy=True)
            except zmq.Again:
                break
            decoded = self._decode(frames)
            if decoded is None:
                continue
            key, pairs = decoded
            if runs and runs[-1][0] == key:
                runs[-1][1].extend(pairs)
            else:
                runs.append([key, list(pairs)])
            events += len(pairs)
            if events >= BURST_EVENTS:
                break
        for key, pairs in runs:
            self._guarded(self._ingest, key, pairs)

    def _decode(self, frames):
        """(key, pairs) of a message; None when it is dropped (counted and logged) or holds
        no events."""
        result = self._guarded(self._decode_one, frames)
        return result if result and result[1] else None

    def _decode_one(self, frames):
        key = self._key(frames)
        if self.mapper is not None and key == self.default_key:
            return key, self.mapper.decode([frames[-1]]).pairs
        return key, decode_pairs(frames[-1])

    def _guarded(self, step, *args):
        try:
            return step(*args)
        except (ReceiverError, BadFrameError) as exc:
            self.bad_messages += 1
            log.warning("ZeroMQ receiver %s: message dropped: %s", self.url, exc)
        except Exception:  # a bug downstream must not kill the receiver thread
            self.bad_messages += 1
            log.exception("ZeroMQ receiver %s: message failed", self.url)
        return None

    def _ingest(self, key, pairs):
        """Route a batch; while the stream's write-ahead log is over its caps (or cannot
        write), hold the frame and read no more: ZeroMQ's high-water marks push back to the
        senders (back-pressure, not loss)."""
        while True:
            try:
                return self.router.ingest_pairs(key, pairs, wait=self.block_s)
            except WalClosedError:
                raise
            except WalError as exc:
                if not self.wal_waits % 20:
                    log.warning(
                        "ZeroMQ receiver %s: holding a frame for %s: %s", self.url, key, exc
                    )
                self.wal_waits += 1
                if self._stop.wait(WAL_RETRY_S):
                    raise

    def _key(self, frames):
        if len(frames) == 2:
            return parse_key(frames[0])
        if len(frames) == 1 and self.default_key:
            return self.default_key
        raise BadPayloadError(f"expected [key, payload] frames, got {len(frames)} frame(s)")


class ZmqEventClient:
    """A PUSH client for the receiver: `send(key, pairs)`; used by tests, tools and benchmarks."""

    def __init__(
        self, url, context=None, sndhwm=10000, keys=None, server_key=None, send_timeout_ms=None
    ):
        """`send_timeout_ms`: how long a send may wait for room (the receiver's back-pressure,
        or no connection at all, e.g. a CURVE handshake the receiver refused) before it raises
        zmq.Again; None waits as long as it takes."""
        self._sock = (context or zmq.Context.instance()).socket(zmq.PUSH)
        self._sock.setsockopt(zmq.LINGER, 2000)
        self._sock.setsockopt(zmq.SNDHWM, sndhwm)
        if send_timeout_ms is not None:
            self._sock.setsockopt(zmq.SNDTIMEO, int(send_timeout_ms))
        curve.client(self._sock, keys, server_key)
        self._sock.connect(url)

    def send(self, key, pairs):
        self._sock.send_multipart([str(StreamKey(*key)).encode(), encode_pairs(pairs)])

    def send_raw(self, frames):
        self._sock.send_multipart(frames)

    def close(self):
        self._sock.close()


def _bind(sock, url):
    """Bind, turning port 0 into a random free port; returns the bound URL."""
    if url.startswith("tcp://") and url.rsplit(":", 1)[-1] in ("0", "*"):
        host = url[len("tcp://") :].rsplit(":", 1)[0]
        port = sock.bind_to_random_port(f"tcp://{host}")
        return f"tcp://{host}:{port}"
    sock.bind(url)
    return sock.getsockopt_string(zmq.LAST_ENDPOINT)
