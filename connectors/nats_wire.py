"""A core NATS subscription on a plain socket: INFO, CONNECT, SUB, then MSG frames cut out of
large reads (and PING answered with PONG), for the NATS source with `jetstream='false'`.

Why not nats-py here: its parser, a Msg object and an awaited callback per message (about
12 us a message on this machine) capped a core NATS source near 80K messages/s. Core NATS
has no acknowledgements, so a subscriber only reads. JetStream (acknowledgements, durable
consumers) stays with nats-py.

The connection asks for no headers and no verbose +OK replies, so the server sends MSG (not
HMSG). TLS when the URL is `tls://` or the server's INFO requires it; a user and password, or
a token (a user without a password), from the connection URL."""

import json
import socket
import ssl

PONG = b"PONG\r\n"


class NatsWireError(ConnectionError):
    """The server refused the connection or the subscription, or the connection broke."""


def _read_line(sock, buf: bytearray) -> bytes:
    while True:
        eol = buf.find(b"\r\n")
        if eol >= 0:
            line = bytes(buf[:eol])
            del buf[: eol + 2]
            return line
        data = sock.recv(65536)
        if not data:
            raise NatsWireError("the server closed the connection")
        buf += data


def open_subscription(
    host: str,
    port: int,
    tls,
    subject,
    user=None,
    password=None,
    name: str = "cep",
    queue: str = None,
    timeout: float = 15.0,
    headers: bool = False,
):
    """(socket, bytes already read) of a connection subscribed to `subject` (sid 1; None:
    no subscription, a publisher); `tls`: True (the system's CAs), an ssl.SSLContext (a
    connection's own CA and client certificate) or False, after the server answered the PING that follows CONNECT
    and SUB (so both were accepted). `headers`: the connection sends HPUB and takes HMSG,
    and a request nobody answers gets a 503 status at once (no_responders)."""
    sock = socket.create_connection((host, port), timeout=timeout)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        buf = bytearray()
        line = _read_line(sock, buf)
        if not line.startswith(b"INFO "):
            raise NatsWireError(f"expected INFO from the server, got {line[:60]!r}")
        info = json.loads(line[5:])
        if tls or info.get("tls_required"):
            ctx = tls if isinstance(tls, ssl.SSLContext) else ssl.create_default_context()
            sock = ctx.wrap_socket(sock, server_hostname=host)
        options = {
            "verbose": False,
            "pedantic": False,
            "lang": "python",
            "version": "cep",
            "protocol": 1,
            "headers": headers,
            "no_responders": headers,
            "name": name,
            "tls_required": bool(tls or info.get("tls_required")),
        }
        if user and password is not None:
            options.update(user=user, **{"pass": password})
        elif user:
            options["auth_token"] = user
        sub = f"SUB {subject} {queue + ' ' if queue else ''}1\r\n".encode() if subject else b""
        sock.sendall(b"CONNECT " + json.dumps(options).encode() + b"\r\n" + sub + b"PING\r\n")
        pending = bytearray()
        while True:
            line = _read_line(sock, buf)
            if line == b"PONG":
                return sock, bytes(pending + buf)
            if line.startswith(b"-ERR"):
                raise NatsWireError(f"the server refused: {line[5:].decode('utf-8', 'replace')}")
            if line.startswith(b"MSG "):  # a message before the PONG: keep it for the reader
                pending += line + b"\r\n"
                size = int(line.rsplit(b" ", 1)[1])
                while len(buf) < size + 2:
                    data = sock.recv(65536)
                    if not data:
                        raise NatsWireError("the server closed the connection")
                    buf += data
                pending += buf[: size + 2]
                del buf[: size + 2]
            # INFO, +OK, PING before the PONG: nothing to keep (a PING is answered below)
            elif line == b"PING":
                sock.sendall(PONG)
    except BaseException:
        sock.close()
        raise


def parse_messages(buf, out, control=None) -> int:
    """Append the MSG frames complete in `buf` to `out` as runs: `(subject bytes, [payload
    bytes, ...])` for consecutive frames of one subject (a source's queue then holds a few
    runs a read); other lines (PING, PONG, +OK, -ERR, INFO) go to `control` when given.
    Returns how many bytes were consumed (an incomplete frame at the end stays for the next
    read)."""
    with memoryview(buf) as view:
        pos, n = 0, len(buf)
        find, rfind, starts = buf.find, buf.rfind, buf.startswith
        head = payloads = None  # head: b"MSG <subject> " of the current run
        while pos < n:
            eol = find(b"\r\n", pos)
            if eol < 0:
                return pos
            if starts(b"MSG ", pos):
                start = eol + 2
                end = start + int(buf[rfind(b" ", pos, eol) + 1 : eol])
                if end + 2 > n:
                    return pos
                if head is None or not starts(head, pos):  # another subject: a new run
                    subject = bytes(view[pos + 4 : find(b" ", pos + 4, eol)])
                    head, payloads = b"MSG " + subject + b" ", []
                    out.append((subject, payloads))
                payloads.append(bytes(view[start:end]))
                pos = end + 2
            else:
                if control is not None:
                    control.append(bytes(view[pos:eol]))
                pos = eol + 2
        return pos


def request_frames(subject: str, payloads, reply: str, first: int, ids=None) -> bytes:
    """PUB frames of every payload, payload i asking for its answer on `<reply>.<first + i>`;
    with `ids`, HPUB frames carrying payload i's `Nats-Msg-Id: ids[i]` header (JetStream's
    duplicate detection). One write for a batch."""
    head, to = b"PUB " + subject.encode() + b" ", reply.encode()
    if ids is None:
        return b"".join(
            [
                b"%s%s.%d %d\r\n%s\r\n" % (head, to, first + i, len(p), p)
                for i, p in enumerate(payloads)
            ]
        )
    out = []
    head = b"H" + head
    for i, p in enumerate(payloads):
        value = ids[i].encode()
        if b"\r" in value or b"\n" in value:
            raise ValueError(f"a message id holds a line break: {ids[i]!r}")
        hdr = b"NATS/1.0\r\nNats-Msg-Id: %s\r\n\r\n" % value
        out.append(
            b"%s%s.%d %d %d\r\n%s%s\r\n"
            % (head, to, first + i, len(hdr), len(hdr) + len(p), hdr, p)
        )
    return b"".join(out)


def parse_replies(buf, out, control=None) -> int:
    """Append `(subject, reply, status, payload)` (bytes each) of every complete MSG or HMSG
    frame in `buf` to `out`: `reply` is the frame's reply subject (a JetStream message's
    acknowledgement subject) or `b""`; `status` that of an HMSG's header block (`b"503"` when
    nobody answered a request, `b"408"` when a pull request expired), else `b""`; the
    payload leaves the headers out. Other lines go to `control` when given. Returns how many
    bytes were consumed."""
    with memoryview(buf) as view:
        pos, n = 0, len(buf)
        find, starts = buf.find, buf.startswith
        while pos < n:
            eol = find(b"\r\n", pos)
            if eol < 0:
                return pos
            if starts(b"MSG ", pos) or starts(b"HMSG ", pos):
                head = bytes(view[pos:eol]).split(b" ")
                start = eol + 2
                end = start + int(head[-1])
                if end + 2 > n:
                    return pos
                status = b""
                if head[0] == b"HMSG":
                    split = start + int(head[-2])
                    first_line = bytes(view[start : find(b"\r\n", start, split)])
                    status = first_line[9:12] if first_line.startswith(b"NATS/1.0 ") else b""
                    start = split
                    head.pop()
                reply = head[3] if len(head) == 5 else b""
                out.append((head[1], reply, status, bytes(view[start:end])))
                pos = end + 2
            else:
                if control is not None:
                    control.append(bytes(view[pos:eol]))
                pos = eol + 2
        return pos


def stream_sequence(reply: bytes) -> int:
    """The stream sequence in a JetStream message's acknowledgement subject
    (`$JS.ACK.<stream>.<consumer>.<delivered>.<stream seq>...`, or the form with a domain and
    an account hash after `$JS.ACK`)."""
    tokens = reply.split(b".")
    return int(tokens[5] if len(tokens) == 9 else tokens[7])


def publish_frames(subject: str, payloads) -> bytes:
    """PUB frames of every payload, joined: one write for a batch."""
    head = f"PUB {subject} ".encode()
    out = []
    for p in payloads:
        out.append(b"%s%d\r\n%s\r\n" % (head, len(p), p))
    return b"".join(out)


def wait_pong(sock, buf: bytearray) -> None:
    """Read until the server's PONG (the answer to the PING sent after a batch: every frame
    before it was processed), answering the server's own PINGs; NatsWireError on -ERR."""
    while True:
        line = _read_line(sock, buf)
        if line == b"PONG":
            return
        if line == b"PING":
            sock.sendall(PONG)
        elif line.startswith(b"-ERR"):
            raise NatsWireError(f"the server refused: {line[5:].decode('utf-8', 'replace')}")
