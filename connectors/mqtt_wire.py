"""MQTT 3.1.1 at QoS 0 over a plain socket: the few packets a QoS 0 publisher and subscriber
need (CONNECT/CONNACK, SUBSCRIBE/SUBACK, PUBLISH, DISCONNECT), for the MQTT connector's
QoS 0 paths.

Why not paho-mqtt here: paho builds, queues and parses every packet in Python with a lock
and a callback each (about 40 us a message on this machine), which caps a QoS 0 sink near
25K and a source near 10K messages/s. At QoS 0 nothing is acknowledged, so a publisher only
writes packets (a batch in one sendall) and a subscriber only cuts PUBLISH packets out of
what it reads. QoS 1 and 2 (acknowledgements, redelivery, sessions) stay with paho.

Keep-alive is 0 (the broker never times the connection out for silence, so an idle sink or
source needs no pings); TCP keep-alive finds a dead peer. `mqtts://` wraps the socket in TLS
with the system's default certificate checks."""

import socket
import ssl
import struct

CONNECT, CONNACK, PUBLISH, SUBSCRIBE, SUBACK, DISCONNECT = 1, 2, 3, 8, 9, 14
_CONNACK_CODES = {
    1: "unacceptable protocol version",
    2: "client id rejected",
    3: "server unavailable",
    4: "bad user name or password",
    5: "not authorized",
}


class MqttWireError(ConnectionError):
    """The broker refused the connection or the subscription, or the connection broke."""


def remaining_length(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n % 128, n // 128
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _text(value: str) -> bytes:
    raw = value.encode("utf-8")
    return struct.pack("!H", len(raw)) + raw


def connect_packet(client_id: str, user=None, password=None, clean=True) -> bytes:
    flags = (0x02 if clean else 0) | (0x80 if user else 0) | (0x40 if user and password else 0)
    body = _text("MQTT") + bytes([4, flags]) + struct.pack("!H", 0) + _text(client_id)
    if user:
        body += _text(user)
        if password:
            body += _text(password)
    return bytes([CONNECT << 4]) + remaining_length(len(body)) + body


def publish_packets(topic: str, payloads, retain=False) -> bytes:
    """PUBLISH packets (QoS 0) of every payload, joined: one write for a batch."""
    head = bytes([(PUBLISH << 4) | (1 if retain else 0)])
    name = _text(topic)
    n = len(name)
    small = {}  # remaining length -> fixed header (payloads of one batch share few sizes)
    out = []
    for p in payloads:
        size = n + len(p)
        fixed = small.get(size)
        if fixed is None:
            fixed = small[size] = head + remaining_length(size) + name
        out.append(fixed)
        out.append(p)
    return b"".join(out)


def subscribe_packet(topic: str, packet_id: int = 1) -> bytes:
    body = struct.pack("!H", packet_id) + _text(topic) + b"\x00"
    return bytes([(SUBSCRIBE << 4) | 0x02]) + remaining_length(len(body)) + body


def parse_publishes(buf, out, others=None) -> int:
    """Append the PUBLISH packets complete in `buf` to `out` as runs: `(topic bytes,
    [payload bytes, ...])` for consecutive packets of one topic (a source's queue then holds
    a few runs a read, not a tuple a message); other packets go to `others` as (type, body)
    when given. Returns how many bytes were consumed (an incomplete packet at the end stays
    for the next read)."""
    with memoryview(buf) as view:
        return _parse(buf, view, out, others)


def _parse(buf, view, out, others):
    pos, n = 0, len(buf)
    topic, payloads, tlen = None, None, -1
    starts = buf.startswith
    while n - pos >= 2:
        b0, d = buf[pos], buf[pos + 1]
        if d < 0x80:  # a remaining length of one byte: every small message
            i, length = pos + 2, d
        else:
            i, length, shift = pos + 1, 0, 0
            while True:
                if i >= n:
                    return pos
                d = buf[i]
                i += 1
                length |= (d & 0x7F) << shift
                if d < 0x80:
                    break
                shift += 7
        end = i + length
        if end > n:
            return pos
        if b0 >> 4 == PUBLISH:
            size = (buf[i] << 8) | buf[i + 1]
            start = i + 2 + size
            if size != tlen or not starts(topic, i + 2):  # another topic: a new run
                topic, tlen, payloads = bytes(view[i + 2 : start]), size, []
                out.append((topic, payloads))
            if b0 & 0x06:  # QoS 1 or 2: a packet id follows the topic
                start += 2
            payloads.append(bytes(view[start:end]))
        elif others is not None:
            others.append((b0 >> 4, bytes(view[i:end])))
        pos = end
    return pos


def open_connection(
    host: str,
    port: int,
    tls: bool,
    client_id: str,
    user=None,
    password=None,
    timeout: float = 15.0,
    clean: bool = True,
) -> socket.socket:
    """A connected socket after a CONNACK that accepted `client_id`."""
    sock = socket.create_connection((host, port), timeout=timeout)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if tls:
            sock = ssl.create_default_context().wrap_socket(sock, server_hostname=host)
        sock.sendall(connect_packet(client_id, user, password, clean))
        reply = _read_exactly(sock, 4)
        if reply[0] >> 4 != CONNACK:
            raise MqttWireError(f"expected CONNACK, got packet type {reply[0] >> 4}")
        if reply[3] != 0:
            raise MqttWireError(
                f"connection refused: {_CONNACK_CODES.get(reply[3], f'code {reply[3]}')}"
            )
        return sock
    except BaseException:
        sock.close()
        raise


def _read_exactly(sock, n):
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise MqttWireError("the broker closed the connection")
        data += chunk
    return data


DISCONNECT_PACKET = bytes([DISCONNECT << 4, 0])
