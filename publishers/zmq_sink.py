"""ZeroMQ PUB sink: each batch as `[topic, frame]`, topic = the stream id, frame = the event
batch format of the manager's PROTOCOL.md section 2 (msgpack `[1, stream, [[ts, [v...]], ...]]`);
with a `@map`, frame = the mapped message (UTF-8), one per batch or per event (see
publishers.base.Sink.messages)."""

import zmq

from cep.protocol.frames import encode_batch
from publishers.base import Sink, message_text
from publishers.exceptions import SinkConfigError, SinkWriteError


class ZmqPubSink(Sink):
    """`@sink(type='zmq', url='tcp://*:5560', mode='bind'|'connect', topic='...')`."""

    type = "zmq"

    def __init__(self, stream, options, context=None):
        super().__init__(stream, options)
        self.url = str(self.option("url", required=True))
        mode = str(self.option("mode", "bind")).lower()
        if mode not in ("bind", "connect"):
            raise SinkConfigError(
                f"@sink(type='zmq') on stream {stream}: mode={mode!r} must be bind or connect"
            )
        self.topic = str(self.option("topic", stream)).encode()
        self._sock = (context or zmq.Context.instance()).socket(zmq.PUB)
        self._sock.setsockopt(zmq.LINGER, 0)
        self._sock.setsockopt(zmq.SNDHWM, self.int_option("hwm", 10000))
        try:
            if mode == "bind":
                self._sock.bind(self.url)
                self.url = self._sock.getsockopt_string(zmq.LAST_ENDPOINT)
            else:
                self._sock.connect(self.url)
        except zmq.ZMQError as exc:
            self._sock.close(0)
            raise SinkConfigError(
                f"@sink(type='zmq') on stream {stream}: cannot {mode} {self.url}: {exc}"
            ) from None

    def write_batch(self, events):
        messages = self.messages(events)
        frames = (
            [encode_batch(self.stream, [[ts, list(row)] for ts, row in events])]
            if messages is None
            else [message_text(m).encode() for m in messages]
        )
        try:
            for frame in frames:
                self._sock.send_multipart([self.topic, frame])
        except zmq.ZMQError as exc:
            raise SinkWriteError(f"zmq sink {self.url}: {exc}") from None
        self.written += len(events)

    def close(self):
        self._sock.close(0)

    def describe(self):
        return {**super().describe(), "url": self.url}
