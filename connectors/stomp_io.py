"""`@source(type='jms')` and `@sink(type='jms')`: JMS queues and topics over STOMP 1.2
(stomp.py), as ActiveMQ serves them (the JMS broker CEP 4.0 users ran).

`destination='/queue/orders'` or `'/topic/prices'`. Source: subscribes with ack mode
`client-individual` and acknowledges each message only after the worker took its events, so
a message the worker did not take is delivered again (a queue keeps it; a topic keeps it for
a durable subscription: `subscription='name'` with a `client.id`). Sink: each event is a
message (persistent by default); a batch is written when the broker's RECEIPT for its last
message came (STOMP frames of one connection are handled in order)."""

import collections
import logging
import threading
import time
import uuid

import stomp

from connectors.connections import parts, shown
from connectors.mapping import decode_payload, json_batch_decoder, sink_payloads
from connectors.options import flag, integer, number, required
from connectors.pump import Fetched, decode_batch
from publishers.base import Sink
from publishers.exceptions import SinkWriteError

log = logging.getLogger(__name__)


def destination(options, where):
    """`/queue/name` or `/topic/name`: as given, or a bare name with `destination.type`
    ('queue' or 'topic', the JMS adapter's option)."""
    name = required(options, "destination", where)
    if name.startswith(("/queue/", "/topic/")):
        return name
    kind = str(options.get("destination.type") or "").lower()
    if kind in ("queue", "topic"):
        return f"/{kind}/{name}"
    raise ValueError(
        f"{where}: destination={name!r} must start with /queue/ or /topic/, or "
        f"come with destination.type='queue' or 'topic'"
    )


def _connection(url, client_id=None):
    scheme, hosts, user, password, _ = parts(url)
    conn = stomp.Connection12(
        [(h, p or 61613) for h, p in hosts], heartbeats=(0, 0), reconnect_attempts_max=-1
    )
    if scheme == "stomp+ssl":
        conn.set_ssl(for_hosts=[(h, p or 61613) for h, p in hosts])
    headers = {"client-id": client_id} if client_id else {}
    return conn, user, password, headers


class _Listener(stomp.ConnectionListener):
    def __init__(self):
        self.messages = collections.deque()
        self.receipts = set()
        self.cond = threading.Condition()
        self.errors = []

    def on_message(self, frame):
        self.messages.append(frame)

    def on_receipt(self, frame):
        with self.cond:
            self.receipts.add(frame.headers.get("receipt-id"))
            self.cond.notify_all()

    def on_error(self, frame):
        self.errors.append(frame.headers.get("message") or frame.body)
        del self.errors[:-20]


class StompSource:
    """A broker source for connectors.pump.BrokerPump; see the module doc."""

    type = "jms"
    decode = staticmethod(decode_payload)  # set by the pump: the @map or this JSON
    decode_many = staticmethod(json_batch_decoder(""))  # set by the pump: per batch

    def __init__(self, key, options, url, position):
        where = f"@source(type='jms') on {key}"
        self.key, self.url = key, url
        self.destination = destination(options, where)
        self.subscription = options.get("subscription")
        self.client_id = options.get("client.id") or (
            f"cep-{key.tenant}-{key.plan}-{key.stream}" if self.subscription else None
        )
        self.batch = integer(options, "batch.size", 1000, where, 1, 100000)
        self.listener = _Listener()
        self.conn = None
        self.sub_id = "cep-1"

    def open(self):
        self.conn, user, password, headers = _connection(self.url, self.client_id)
        self.conn.set_listener("cep", self.listener)
        self.conn.connect(user, password, wait=True, headers=headers)
        extra = {"activemq.prefetchSize": str(self.batch * 2)}
        if self.subscription:
            extra["activemq.subscriptionName"] = str(self.subscription)
        receipt = uuid.uuid4().hex  # a topic drops what is sent before the subscription
        self.conn.subscribe(
            self.destination,
            id=self.sub_id,
            ack="client-individual",
            headers={**extra, "receipt": receipt},
        )
        with self.listener.cond:
            if not self.listener.cond.wait_for(lambda: receipt in self.listener.receipts, 15):
                raise ConnectionError(
                    f"jms source {shown(self.url)}: no receipt for the "
                    f"subscription to {self.destination} within 15 s"
                )

    def fetch(self, timeout):
        queue = self.listener.messages
        if not queue:
            time.sleep(min(timeout, 0.01))
            if not queue:
                return None
        frames = [queue.popleft() for _ in range(min(len(queue), self.batch))]
        acks = [f.headers.get("ack") or f.headers.get("message-id") for f in frames]
        events, pairs, bad = decode_batch(
            self,
            [f.body for f in frames],
            lambda i: f"message {frames[i].headers.get('message-id')}",
        )
        return Fetched(events, bad, acks, pairs)

    def ack(self, token):
        for ack_id in token or ():
            self.conn.ack(ack_id)  # STOMP 1.2: the ack header names the message

    def close(self):
        if self.conn is not None and self.conn.is_connected():
            self.conn.disconnect()

    def describe(self):
        return {
            "type": "jms",
            "url": shown(self.url),
            "destination": self.destination,
            "subscription": self.subscription,
            "errors": list(self.listener.errors[-3:]),
        }


class StompSink(Sink):
    """`@sink(type='jms', connection='amq', destination='/queue/alerts')`."""

    type = "jms"

    def __init__(self, stream, options, url):
        super().__init__(stream, options)
        where = f"@sink(type='jms') on stream {stream}"
        self.url = url
        self.destination = destination(self.options, where)
        self.persistent = flag(self.options, "persistent", True, where)
        self.timeout = number(self.options, "timeout", 10.0, where)
        self.per_message = integer(self.options, "batch.events", 1, where, 1, 100000)
        self.listener = _Listener()
        self.conn, user, password, headers = _connection(url)
        self.conn.set_listener("cep", self.listener)
        self.conn.connect(user, password, wait=True, headers=headers)

    def write_batch(self, events):
        if not events:
            return
        headers = {"persistent": "true"} if self.persistent else {}
        receipt = uuid.uuid4().hex
        try:
            payloads = sink_payloads(self, events, self.per_message)
            last = len(payloads) - 1
            for i, payload in enumerate(payloads):
                extra = {**headers, "receipt": receipt} if i == last else headers
                self.conn.send(self.destination, payload, headers=extra)
        except stomp.exception.StompException as exc:
            raise SinkWriteError(f"jms sink {shown(self.url)} {self.destination}: {exc}") from None
        with self.listener.cond:
            if not self.listener.cond.wait_for(
                lambda: receipt in self.listener.receipts, self.timeout
            ):
                raise SinkWriteError(
                    f"jms sink {shown(self.url)} {self.destination}: no "
                    f"receipt within {self.timeout} s"
                )
            self.listener.receipts.discard(receipt)
        self.written += len(events)

    def close(self):
        if self.conn.is_connected():
            self.conn.disconnect()

    def describe(self):
        return {**super().describe(), "url": shown(self.url), "destination": self.destination}
