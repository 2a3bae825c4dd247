"""`@source(type='mqtt')` and `@sink(type='mqtt')`: MQTT 3.1.1 with paho-mqtt, QoS 0, 1 or 2.

Source: subscribes to `topic` (wildcards allowed) at `qos` (default 1) with a persistent
session (`clean.session='false'`, the default for QoS 1 and 2; the client id, default one per
plan stream, names the session). Messages are acknowledged by hand (paho's manual_ack) only
after the worker took their events, so a QoS 1 or 2 message the worker did not take is sent
again by the broker when the source reconnects: no accepted event is lost. QoS 0 is at most
once: the source reads PUBLISH packets off its own socket (connectors/mqtt_wire.py, a reader
thread that reconnects and subscribes again after a broken connection), since paho's
per-message callback is what limits a QoS 0 source.

Sink: each event is a message on `topic` at `qos` (default 1), `retain` optional; a batch is
written when the broker confirmed every message of it (QoS 1 and 2). At QoS 0 a batch is one
socket write of its PUBLISH packets (connectors/mqtt_wire.py); a broken connection is a
write error and the next batch connects again."""

import collections
import logging
import threading
import time

import paho.mqtt.client as mqtt

from connectors.connections import parts, shown
from connectors.mapping import decode_payload, json_batch_decoder, sink_payloads
from connectors.mqtt_wire import (
    DISCONNECT_PACKET,
    SUBACK,
    open_connection,
    parse_publishes,
    publish_packets,
    subscribe_packet,
)
from connectors.options import alias, flag, integer, number, required
from connectors.pump import Fetched, decode_batch
from connectors.wire_reader import WireReader, take, topic_of
from publishers.base import Sink
from publishers.exceptions import SinkWriteError

log = logging.getLogger(__name__)


def _client(url, client_id, clean, manual_ack=False):
    scheme, hosts, user, password, _ = parts(url)
    client = mqtt.Client(
        mqtt.CallbackAPIVersion.VERSION2,
        client_id=client_id,
        clean_session=clean,
        manual_ack=manual_ack,
    )
    if user:
        client.username_pw_set(user, password)
    if scheme == "mqtts":
        client.tls_set()
    client.max_inflight_messages_set(1000)
    client.max_queued_messages_set(0)
    host, port = hosts[0]
    return client, host, port or (8883 if scheme == "mqtts" else 1883)


def _safe_id(text):
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in text)[:64]


class MqttSource(WireReader):
    """A broker source for connectors.pump.BrokerPump; see the module doc."""

    type = "mqtt"
    decode = staticmethod(decode_payload)  # set by the pump: the @map or this JSON
    decode_many = staticmethod(json_batch_decoder(""))  # set by the pump: per batch

    def __init__(self, key, options, url, position):
        where = f"@source(type='mqtt') on {key}"
        self.key, self.url = key, url
        options = alias(options, "qos", "quality.of.service")
        self.topic = required(options, "topic", where)
        self.qos = integer(options, "qos", 1, where, 0, 2)
        self.client_id = _safe_id(
            str(options.get("client.id") or f"cep-{key.tenant}-{key.plan}-{key.stream}")
        )
        self.clean = flag(options, "clean.session", self.qos == 0, where)
        self.batch = integer(options, "batch.size", 1000, where, 1, 100000)
        self._queue = collections.deque()
        self._ready = threading.Event()
        self.client = self._sock = self._reader = None
        self._stop, self._arrived = threading.Event(), threading.Event()
        self.connects = 0

    def open(self):
        if self.qos == 0:  # nothing to acknowledge: read PUBLISH packets off the socket
            self._open_raw()
            return
        self.client, host, port = _client(
            self.url, self.client_id, self.clean, manual_ack=self.qos > 0
        )
        self.client.on_connect = self._on_connect
        self.client.on_message = lambda c, u, msg: self._queue.append(msg)
        self.client.connect(host, port, keepalive=30)
        self.client.loop_start()
        if not self._ready.wait(15):
            self.close()
            raise ConnectionError(f"mqtt source {shown(self.url)}: no CONNACK within 15 s")

    def _on_connect(self, client, userdata, flags, reason, properties):
        if reason.is_failure:
            log.warning("mqtt source %s: connect refused: %s", self.key, reason)
            return
        self.connects += 1
        client.subscribe(self.topic, qos=self.qos)  # again after every reconnect
        self._ready.set()

    # -- QoS 0: connectors/mqtt_wire.py on a reader thread --------------------------------
    def _open_raw(self):
        self._stop = threading.Event()
        self._sock, _ = self._connect_raw()
        self._reader = threading.Thread(
            target=self._read_loop,
            daemon=True,
            args=("mqtt", b"", self._parse, self._control),
            name=f"mqtt source {self.key}",
        )
        self._reader.start()
        if not self._ready.wait(15):
            self.close()
            raise ConnectionError(f"mqtt source {shown(self.url)}: no SUBACK within 15 s")

    def _connect_raw(self):
        scheme, hosts, user, password, _ = parts(self.url)
        host, port = hosts[0]
        sock = open_connection(
            host,
            port or (8883 if scheme == "mqtts" else 1883),
            scheme == "mqtts",
            self.client_id,
            user,
            password,
            clean=self.clean,
        )
        sock.sendall(subscribe_packet(self.topic))
        sock.settimeout(1.0)
        self.connects += 1
        return sock, b""

    @staticmethod
    def _parse(buf, runs, frames):
        return parse_publishes(buf, runs, frames)

    def _control(self, sock, frames):
        for kind, body in frames:
            if kind == SUBACK:
                if body[2:3] == b"\x80":
                    log.error(
                        "mqtt source %s: the broker refused the subscription to %r",
                        self.key,
                        self.topic,
                    )
                else:
                    self._ready.set()

    def _fetch_raw(self, timeout):
        payloads, runs = take(self._queue, self.batch)
        events, pairs, bad = decode_batch(
            self, payloads, lambda i: f"topic {topic_of(runs, i).decode('utf-8', 'replace')}"
        )
        return Fetched(events, bad, None, pairs)

    def fetch(self, timeout):
        if self.qos == 0:
            if not self._queue:
                self._arrived.clear()
                if not self._queue and not self._arrived.wait(timeout):  # the reader sets it
                    return None
            return self._fetch_raw(timeout)
        if not self._queue:
            time.sleep(min(timeout, 0.01))
            if not self._queue:
                return None
        queue, msgs = self._queue, []
        for _ in range(min(len(queue), self.batch)):  # everything there, up to batch.size
            msgs.append(queue.popleft())
        acks = [(m.mid, m.qos) for m in msgs if m.qos > 0]
        events, pairs, bad = decode_batch(
            self, [m.payload for m in msgs], lambda i: f"topic {msgs[i].topic}"
        )
        return Fetched(events, bad, acks, pairs)

    def ack(self, token):
        for mid, qos in token or ():
            self.client.ack(mid, qos)

    def close(self):
        if self.qos == 0:
            self._stop.set()
            sock = self._sock
            if sock is not None:
                try:
                    sock.sendall(DISCONNECT_PACKET)
                except OSError:
                    pass
                sock.close()
            if self._reader is not None:
                self._reader.join(5)
            return
        if self.client is not None:
            self.client.disconnect()
            self.client.loop_stop()

    def describe(self):
        return {
            "type": "mqtt",
            "url": shown(self.url),
            "topic": self.topic,
            "qos": self.qos,
            "client_id": self.client_id,
            "clean_session": self.clean,
            "connects": self.connects,
        }


class MqttSink(Sink):
    """`@sink(type='mqtt', connection='plant', topic='alerts', qos='1')`."""

    type = "mqtt"

    def __init__(self, stream, options, url):
        super().__init__(stream, options)
        where = f"@sink(type='mqtt') on stream {stream}"
        self.url = url
        self.options = alias(
            alias(self.options, "qos", "quality.of.service"), "retain", "message.retain"
        )
        self.topic = required(self.options, "topic", where)
        self.qos = integer(self.options, "qos", 1, where, 0, 2)
        self.retain = flag(self.options, "retain", False, where)
        self.timeout = number(self.options, "timeout", 10.0, where)
        self.per_message = integer(self.options, "batch.events", 1, where, 1, 100000)
        self.client_id = _safe_id(
            str(self.options.get("client.id") or f"cep-sink-{stream}-{id(self)}")
        )
        self.client = self._sock = None
        if self.qos == 0:  # nothing to confirm: PUBLISH packets written straight to a socket
            self._sock = self._connect_raw()
            return
        self.client, host, port = _client(url, self.client_id, True)
        self.client.connect(host, port, keepalive=30)
        self.client.loop_start()

    def _connect_raw(self):
        scheme, hosts, user, password, _ = parts(self.url)
        host, port = hosts[0]
        sock = open_connection(
            host,
            port or (8883 if scheme == "mqtts" else 1883),
            scheme == "mqtts",
            self.client_id,
            user,
            password,
            timeout=self.timeout,
        )
        return sock

    def _write_raw(self, events):
        data = publish_packets(
            self.topic, sink_payloads(self, events, self.per_message), self.retain
        )
        try:
            if self._sock is None:
                self._sock = self._connect_raw()
            self._sock.sendall(data)
        except OSError as exc:  # MqttWireError too: a new connection for the next batch
            if self._sock is not None:
                self._sock.close()
            self._sock = None
            raise SinkWriteError(f"mqtt sink {shown(self.url)} topic {self.topic}: {exc}") from None
        self.written += len(events)

    def write_batch(self, events):
        if self.qos == 0:
            self._write_raw(events)
            return
        infos = [
            self.client.publish(self.topic, payload, qos=self.qos, retain=self.retain)
            for payload in sink_payloads(self, events, self.per_message)
        ]
        deadline = time.monotonic() + self.timeout
        for info in infos if self.qos > 0 else infos[-1:]:
            try:
                info.wait_for_publish(max(0.0, deadline - time.monotonic()))
            except (RuntimeError, ValueError) as exc:
                raise SinkWriteError(
                    f"mqtt sink {shown(self.url)} topic {self.topic}: {exc}"
                ) from None
            if not info.is_published() and self.qos > 0:
                raise SinkWriteError(
                    f"mqtt sink {shown(self.url)} topic {self.topic}: not "
                    f"confirmed within {self.timeout} s (rc {info.rc})"
                )
        self.written += len(events)

    def close(self):
        if self._sock is not None:
            try:
                self._sock.sendall(DISCONNECT_PACKET)
            except OSError:
                pass
            self._sock.close()
            self._sock = None
        if self.client is not None:
            self.client.disconnect()
            self.client.loop_stop()

    def describe(self):
        return {**super().describe(), "url": shown(self.url), "topic": self.topic, "qos": self.qos}
