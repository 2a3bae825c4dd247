"""`@source(type='nats')` and `@sink(type='nats')`: NATS with JetStream. nats-py creates
streams and durable consumers; messages go over sockets of the connector's own
(connectors/nats_wire.py), since nats-py's per-message Python (a Msg, a future or task and a
parse each: 12 to 60 us a message here) capped every path far below 100K messages/s.

Source (JetStream, the default): a durable pull consumer (`durable`, default one per plan
stream) on `subject` of JetStream stream `stream` (created for the subject when missing and
`create.stream` is true). Messages are acknowledged (ack-all: the last of a batch covers the
batch) only after the worker took their events; the stream sequence of the last message
handed on is saved first (connectors/position.py), so a restarted source skips messages it
handed on before even when JetStream redelivers them. Messages are pulled (a request for
`batch.size` messages, and the next one sent as soon as a batch came full) and the batch's
acknowledgement is one publish. `jetstream='false'`: a plain NATS subscription (at most
once: what arrives while the worker is down is lost), reconnected after a broken
connection.

Sink (JetStream, the default): each event is a message on `subject`; a batch is written
when JetStream confirmed every message of it (at most `max.pending` unconfirmed at a time).
The batch goes out in one write, each message asking for its acknowledgement on a reply
subject of its own; the acknowledgements are read back and decoded in one loop. With
`delivery='exactly-once'` each message carries a `Nats-Msg-Id` made of the result's
identity (publisher bolt, lane and number, or epoch and number), which a replay after a
restore gives the same result again:
JetStream drops the copy within the stream's duplicate window (2 minutes by default), so
the output stream holds each result once even across a worker restart. `jetstream='false'`
publishes plain NATS messages: a batch's PUB frames in one socket write followed by a PING,
done when the server's PONG says it processed them (connectors/nats_wire.py)."""

import collections
import logging
import re
import secrets
import socket
import ssl
import threading
import time
from typing import Optional

import msgspec

import nats
import nats.js.errors
from nats.js.api import AckPolicy, ConsumerConfig, StreamConfig

from connectors.aio import LoopThread
from connectors.connections import parts, shown
from connectors.mapping import decode_payload, json_batch_decoder, sink_payloads
from connectors.nats_transport import split_tls, tls_context
from connectors.nats_wire import (
    PONG,
    NatsWireError,
    open_subscription,
    parse_messages,
    parse_replies,
    publish_frames,
    request_frames,
    stream_sequence,
    wait_pong,
)
from connectors.options import alias, flag, integer, number, required
from connectors.pump import Fetched, decode_batch
from connectors.wire_reader import WireReader, take, topic_of
from publishers.base import Sink
from publishers.exceptions import SinkWriteError

log = logging.getLogger(__name__)
MSG_ID = "Nats-Msg-Id"


def default_stream(subject: str) -> str:
    """A JetStream stream name for a subject (names may not hold `.`, `*`, `>` or spaces)."""
    return "CEP_" + re.sub(r"[^A-Za-z0-9_-]", "_", subject).strip("_").upper()


def _name(text):
    return re.sub(r"[^A-Za-z0-9_-]", "_", text)


def _endpoint(url):
    """(TLS: an ssl.SSLContext or False, [(host, port)], user, password) of a connection URL;
    a tls:// URL may name its CA and client certificate (connectors/nats_transport.split_tls)."""
    base, options = split_tls(url)
    scheme, hosts, user, password, _ = parts(base)
    return (tls_context(options) if scheme == "tls" else False), hosts, user, password


async def _connect(url, name):
    base, options = split_tls(url)
    tls = {"tls": tls_context(options)} if base.lower().startswith("tls://") else {}
    return await nats.connect(
        servers=[base],
        name=name,
        connect_timeout=5,
        max_reconnect_attempts=-1,
        reconnect_time_wait=0.5,
        allow_reconnect=True,
        **tls,
    )


async def _ensure_stream(js, stream, subject):
    """Create JetStream stream `stream` for `subject` when it does not exist."""
    try:
        await js.stream_info(stream)
    except nats.js.errors.NotFoundError:
        await js.add_stream(StreamConfig(name=stream, subjects=[subject]))


def _replies(sock, buf, data):
    """The messages `data` completes in `buf` (a bytearray, consumed), answering the server's
    PINGs; NatsWireError when the server closed the connection or refused something."""
    if not data:
        raise NatsWireError("the server closed the connection")
    buf += data
    replies, control = [], []
    del buf[: parse_replies(buf, replies, control)]
    for line in control:
        if line == b"PING":
            sock.sendall(PONG)
        elif line.startswith(b"-ERR"):
            raise NatsWireError(f"the server refused: {line[5:].decode('utf-8', 'replace')}")
    return replies


class NatsSource(WireReader):
    """A broker source for connectors.pump.BrokerPump; see the module doc."""

    type = "nats"
    decode = staticmethod(decode_payload)  # set by the pump: the @map or this JSON
    decode_many = staticmethod(json_batch_decoder(""))  # set by the pump: per batch

    def __init__(self, key, options, url, position):
        where = f"@source(type='nats') on {key}"
        self.key, self.url = key, url
        options = alias(options, "durable", "durable.name")
        self.subject = required(options, "subject", where, "destination")
        self.jetstream = flag(options, "jetstream", True, where)
        self.stream = str(options.get("stream") or default_stream(self.subject))
        self.durable = _name(
            str(options.get("durable") or f"cep_{key.tenant}_{key.plan}_{key.stream}")
        )
        self.batch = integer(options, "batch.size", 1000, where, 1, 100000)
        self.ack_wait = number(options, "ack.wait", 30.0, where)
        self.create = flag(options, "create.stream", True, where)
        self.position = position
        saved = position.load()
        self.seq = int(saved) if saved is not None else 0
        self.skipped = 0
        self._queue = collections.deque()  # core NATS: runs (subject, [payload, ...])
        self._sock = self._reader = None  # JetStream and core NATS: connectors/nats_wire.py
        self._buf = bytearray()
        self._inbox, self._next = f"_INBOX.{secrets.token_hex(11)}", 0
        self._pending = None  # the open pull request: [reply subject, messages to come]
        self._stop, self._arrived = threading.Event(), threading.Event()
        self.connects = 0

    def open(self):
        if not self.jetstream:  # core NATS: MSG frames off a socket of its own
            self._open_raw()
            return
        loop = LoopThread(f"nats {self.key}")
        try:
            loop.run(self._open(), 30)
        finally:
            loop.close()
        self._connect_js()

    # -- core NATS: connectors/nats_wire.py on a reader thread -----------------------------
    def _open_raw(self):
        self._stop = threading.Event()
        self._sock, first = self._connect_raw()
        self._reader = threading.Thread(
            target=self._read_loop,
            daemon=True,
            args=("nats", first, self._parse, self._control),
            name=f"nats source {self.key}",
        )
        self._reader.start()

    def _connect_raw(self):
        tls, hosts, user, password = _endpoint(self.url)
        host, port = hosts[0]
        sock, first = open_subscription(
            host,
            port or 4222,
            tls,
            self.subject,
            user,
            password,
            f"cep source {self.key}",
        )
        sock.settimeout(1.0)
        self.connects += 1
        return sock, first

    @staticmethod
    def _parse(buf, runs, frames):
        return parse_messages(buf, runs, frames)

    def _control(self, sock, frames):
        for line in frames:
            if line == b"PING":
                sock.sendall(PONG)
            elif line.startswith(b"-ERR"):
                log.warning(
                    "nats source %s: the server says %s", self.key, line.decode("utf-8", "replace")
                )

    async def _open(self):
        """The stream (when `create.stream`) and the durable consumer exist (nats-py); the
        messages are then pulled on a socket of the source's own."""
        nc = await _connect(self.url, f"cep source {self.key}")
        try:
            js = nc.jetstream()
            if self.create:
                await _ensure_stream(js, self.stream, self.subject)
            config = ConsumerConfig(
                ack_policy=AckPolicy.ALL,
                ack_wait=self.ack_wait,
                max_ack_pending=max(4 * self.batch, 1000),
            )
            await js.pull_subscribe(
                self.subject, durable=self.durable, stream=self.stream, config=config
            )
        finally:
            await nc.close()  # the durable consumer stays

    def _connect_js(self):
        tls, hosts, user, password = _endpoint(self.url)
        host, port = hosts[0]
        self._sock, first = open_subscription(
            host,
            port or 4222,
            tls,
            f"{self._inbox}.*",
            user,
            password,
            f"cep source {self.key}",
            headers=True,
        )
        self._buf = bytearray(first)
        self.connects += 1

    def fetch(self, timeout):
        if not self.jetstream:
            return self._fetch_core(timeout)
        try:
            return self._fetch_js(timeout)
        except (OSError, ValueError) as exc:  # NatsWireError too: connect again next fetch
            if self._sock is not None:
                self._sock.close()
            self._sock = None
            raise ConnectionError(f"nats source {shown(self.url)}: {exc}") from None

    def _request(self, timeout):
        """Send a pull request for up to `batch.size` messages, open for `timeout` s."""
        k = self._next
        self._next += 1
        self._sock.settimeout(10.0)
        request = b'{"batch":%d,"expires":%d}' % (self.batch, int(timeout * 1e9))
        mine = b"%s.%d" % (self._inbox.encode(), k)
        self._sock.sendall(
            b"PUB $JS.API.CONSUMER.MSG.NEXT.%s.%s %s %d\r\n%s\r\n"
            % (self.stream.encode(), self.durable.encode(), mine, len(request), request)
        )
        self._pending = [mine, self.batch]  # reply subject, messages still to come

    def _pull(self, timeout):
        """The (acknowledgement subject, payload) of the messages that arrived: waits up to
        `timeout` for the first, then takes what else is already there (about `batch.size`
        at most). One pull request
        is open at a time; JetStream sends its messages as they come, until `batch.size`
        (then the next request goes out at once, so JetStream reads on while the worker
        takes this batch) or its expiry (a 408 status). What was sent toward a source that
        stopped stays unacknowledged and comes again after ack.wait."""
        if self._sock is None:
            self._connect_js()
            self._pending = None
        if self._pending is None:
            self._request(timeout)
        sock, buf, msgs = self._sock, self._buf, []
        deadline = time.monotonic() + timeout
        while len(msgs) < self.batch:
            left = deadline - time.monotonic()
            # after the first messages (or at the deadline) only what is already there
            sock.settimeout(0.0 if msgs or left <= 0 else left)
            try:
                data = sock.recv(262144)
            except (socket.timeout, BlockingIOError, ssl.SSLWantReadError):
                break  # nothing more now (a TLS socket says it with SSLWantReadError)
            replies = _replies(sock, buf, data)
            for subject, reply, status, payload in replies:
                if not status:
                    msgs.append((reply, payload))
                    if self._pending is not None:
                        self._pending[1] -= 1
                        if self._pending[1] <= 0:  # complete: ask for the next batch now
                            self._request(timeout)
                elif self._pending is not None and subject == self._pending[0]:
                    if status in (b"404", b"408"):  # expired: a new request next time
                        self._pending = None
                    elif status != b"100":  # 409 and the like
                        self._pending = None
                        raise NatsWireError(
                            f"the pull request was refused: status "
                            f"{status.decode()} {payload[:80]!r}"
                        )
            if self._pending is None and not msgs:
                self._request(timeout)  # expired with nothing: wait on a new one
        sock.settimeout(10.0)  # for the acknowledgement
        return msgs

    def _fetch_js(self, timeout):
        msgs = self._pull(timeout)
        if not msgs:
            return None
        last, kept = None, []
        for reply, data in msgs:
            seq = stream_sequence(reply)
            last = (reply, seq) if last is None or seq >= last[1] else last
            if seq <= self.seq:  # handed on before a restart; JetStream redelivered it
                self.skipped += 1
                continue
            kept.append((seq, data))
        events, pairs, bad = decode_batch(
            self, [d for _, d in kept], lambda i: f"stream sequence {kept[i][0]}"
        )
        return Fetched(events, bad, last, pairs)

    def _fetch_core(self, timeout):
        if not self._queue:
            self._arrived.clear()
            if not self._queue and not self._arrived.wait(timeout):  # the reader sets it
                return None
        payloads, runs = take(self._queue, self.batch)
        events, pairs, bad = decode_batch(
            self, payloads, lambda i: f"subject {topic_of(runs, i).decode('utf-8', 'replace')}"
        )
        return Fetched(events, bad, None, pairs)

    def ack(self, token):
        """Acknowledge the batch up to its last message (the consumer acknowledges all),
        after saving its stream sequence."""
        if token is None:
            return
        reply, seq = token
        if seq > self.seq:
            self.position.save(seq)
            self.seq = seq
        try:
            self._sock.sendall(b"PUB %s 4\r\n+ACK\r\n" % reply)
        except (OSError, AttributeError) as exc:  # JetStream sends the batch again after
            # ack.wait; the saved sequence skips it
            log.warning("nats source %s: acknowledgement not sent: %s", self.key, exc)
            if self._sock is not None:
                self._sock.close()
            self._sock = None

    def close(self):
        self._stop.set()
        if self._sock is not None:  # unacknowledged messages stay in JetStream
            self._sock.close()
            self._sock = None
        if self._reader is not None:
            self._reader.join(5)

    def describe(self):
        return {
            "type": "nats",
            "url": shown(self.url),
            "subject": self.subject,
            "jetstream": self.jetstream,
            "stream": self.stream if self.jetstream else None,
            "durable": self.durable if self.jetstream else None,
            "position": self.seq,
            "skipped": self.skipped,
        }


class _PubAck(msgspec.Struct):
    """JetStream's answer to a publish: the stream and sequence that hold the message
    (`duplicate` when it was dropped as a copy), or an error."""

    stream: str = ""
    seq: int = 0
    duplicate: bool = False
    error: Optional[dict] = None


_decode_ack = msgspec.json.Decoder(_PubAck).decode


def message_ids(stream, ident, n):
    """The JetStream message id of each of the `n` results of a batch with identity `ident`
    (cep/protocol/frames.Identity): the same result replayed gets the same id."""
    if ident.runs is not None:
        return [
            f"{stream}:{ident.publisher}:{lane}:{first + k}"
            for lane, first, count in ident.runs
            for k in range(count)
        ]
    return [f"{stream}:{ident.publisher}:e{ident.epoch}:{ident.first_seq + k}" for k in range(n)]


class NatsSink(Sink):
    """`@sink(type='nats', connection='events', subject='alerts')`; see the module doc."""

    type = "nats"

    def __init__(self, stream, options, url):
        super().__init__(stream, options)
        where = f"@sink(type='nats') on stream {stream}"
        self.url = url
        self.subject = required(self.options, "subject", where, "destination")
        self.jetstream = flag(self.options, "jetstream", True, where)
        self.js_stream = str(self.options.get("stream") or default_stream(self.subject))
        self.create = flag(self.options, "create.stream", True, where)
        self.timeout = number(self.options, "timeout", 10.0, where)
        self.max_pending = integer(self.options, "max.pending", 8192, where, 1)
        self.per_message = integer(self.options, "batch.events", 1, where, 1, 100000)
        self.duplicates = 0
        self.nc = self.js = self._sock = None  # _sock: connectors/nats_wire.py
        self._buf = bytearray()
        self._inbox, self._next = f"_INBOX.{secrets.token_hex(11)}", 0
        self.loop = LoopThread(f"nats sink {stream}") if self.jetstream else None

    async def _create_stream(self):
        nc = await _connect(self.url, f"cep sink {self.stream}")
        try:
            await _ensure_stream(nc.jetstream(), self.js_stream, self.subject)
        finally:
            await nc.close()

    def write_batch(self, events):
        if not self.jetstream:
            self._send_core(events)
            return
        self._send(events, None)

    def _send_core(self, events):
        """Core NATS: the batch's PUB frames and a PING in one write, done at the PONG (the
        server processed every frame), as nats-py's publish and flush would be."""
        data = publish_frames(self.subject, sink_payloads(self, events, self.per_message))
        try:
            if self._sock is None:
                tls, hosts, user, password = _endpoint(self.url)
                host, port = hosts[0]
                self._sock, first = open_subscription(
                    host,
                    port or 4222,
                    tls,
                    None,
                    user,
                    password,
                    f"cep sink {self.stream}",
                    timeout=self.timeout,
                )
                self._buf = bytearray(first)
            self._sock.sendall(data + b"PING\r\n")
            wait_pong(self._sock, self._buf)
        except (OSError, ValueError) as exc:  # NatsWireError too: connect again next batch
            if self._sock is not None:
                self._sock.close()
            self._sock = None
            raise SinkWriteError(
                f"nats sink {shown(self.url)} subject {self.subject}: {type(exc).__name__}: {exc}"
            ) from None
        self.written += len(events)

    def stage(self, events, ident):
        """Exactly-once output: published at once with message ids JetStream deduplicates
        (a replay sends the same ids), so nothing waits for the checkpoint."""
        if self.per_message > 1 or getattr(self.mapper, "groups", False):
            # a replay may cut its batches elsewhere: ids per event
            raise SinkWriteError(
                f"nats sink {self.subject}: delivery='exactly-once' needs "
                f"one event per message (batch.events='1', and no @map that groups events)"
            )
        self._send(events, message_ids(self.stream, ident, len(events)))

    def commit(self, checkpoint):
        """Nothing staged: JetStream's message ids make the published output exactly-once."""

    def restart(self, publisher, restored):
        """Nothing staged to discard."""

    def _send(self, events, ids):
        if not self.jetstream:  # core NATS keeps no message ids: nothing to deduplicate
            self._send_core(events)
            return
        payloads = sink_payloads(self, events, self.per_message)
        try:
            dups, step = 0, self.max_pending  # at most max.pending unconfirmed at a time
            for k in range(0, len(payloads), step):
                dups += self._publish(
                    payloads[k : k + step], ids[k : k + step] if ids is not None else None
                )
        except SinkWriteError:
            raise
        except (OSError, ValueError, TimeoutError) as exc:  # NatsWireError too
            if self._sock is not None:  # connect again for the next batch
                self._sock.close()
            self._sock = None
            raise SinkWriteError(
                f"nats sink {shown(self.url)} subject {self.subject}: {type(exc).__name__}: {exc}"
            ) from None
        except Exception as exc:  # noqa: BLE001 - nats-py creating the stream
            raise SinkWriteError(
                f"nats sink {shown(self.url)} subject {self.subject}: {type(exc).__name__}: {exc}"
            ) from None
        self.duplicates += dups
        self.written += len(events) - dups  # ids (and so copies) only at one event a message

    def _connect_js(self):
        """The stream exists (created with nats-py when `create.stream`), and a socket
        subscribed to this sink's reply subjects."""
        if self.create:
            self.loop.run(self._create_stream(), self.timeout + 5)
        tls, hosts, user, password = _endpoint(self.url)
        host, port = hosts[0]
        self._sock, first = open_subscription(
            host,
            port or 4222,
            tls,
            f"{self._inbox}.*",
            user,
            password,
            f"cep sink {self.stream}",
            timeout=self.timeout,
            headers=True,
        )
        self._buf = bytearray(first)

    def _publish(self, payloads, ids):
        """Publish a batch and wait for JetStream's acknowledgement of each message; the
        number of duplicates it dropped. SinkWriteError when JetStream refused a message."""
        if self._sock is None:
            self._connect_js()
        sock, n, first = self._sock, len(payloads), self._next
        self._next += n
        sock.sendall(request_frames(self.subject, payloads, self._inbox, first, ids))
        answers, deadline, buf = [None] * n, time.monotonic() + self.timeout, self._buf
        missing = n
        while missing:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(
                    f"{missing} of {n} messages not confirmed by JetStream within {self.timeout} s"
                )
            sock.settimeout(left)
            data = sock.recv(262144)
            replies = _replies(sock, buf, data)
            for subject, _, status, payload in replies:
                i = int(subject[subject.rfind(b".") + 1 :]) - first
                if 0 <= i < n and answers[i] is None:  # else: a late answer of a failed batch
                    answers[i] = (status, payload)
                    missing -= 1
        dups, refused = 0, []
        for status, payload in answers:
            if status:
                refused.append(
                    "no JetStream stream takes the subject (status 503)"
                    if status == b"503"
                    else f"status {status.decode()}"
                )
                continue
            ack = _decode_ack(payload)
            if ack.error is not None:
                refused.append(str(ack.error.get("description") or ack.error))
            elif ack.duplicate:
                dups += 1
        if refused:
            raise SinkWriteError(
                f"nats sink {shown(self.url)} subject {self.subject}: "
                f"JetStream refused {len(refused)} of {n} messages: "
                f"{refused[0]}"
            )
        return dups

    def dropped_duplicates(self):
        return self.dedup_dropped + self.duplicates

    def close(self):
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        if self.loop is None:
            return
        try:
            if self.nc is not None and not self.nc.is_closed:
                self.loop.run(self.nc.drain(), 10)
        except Exception:  # noqa: BLE001
            log.debug("nats sink %s: close failed", self.stream, exc_info=True)
        self.loop.close()

    def describe(self):
        return {
            **super().describe(),
            "url": shown(self.url),
            "subject": self.subject,
            "jetstream": self.jetstream,
            "duplicates": self.duplicates,
        }
