"""`@source(type='websocket')` and `@sink(type='websocket')`: a WebSocket client (the
`websockets` library) of the server the connection names (`ws://` or `wss://`, path
included), as CEP 4.0's websocket adapters are. Source: every text or binary message is a
payload of events; the connection is opened again after a loss (WebSocket has no
acknowledgement: what the server sends while the source is away is lost, at most once).
Sink: each event is a text message."""

import asyncio
import collections
import logging
import time

import websockets

from connectors.aio import LoopThread
from connectors.connections import shown
from connectors.mapping import decode_payload, json_batch_decoder, sink_payloads
from connectors.options import integer, number
from connectors.pump import Fetched, decode_batch
from publishers.base import Sink
from publishers.exceptions import SinkWriteError

log = logging.getLogger(__name__)


class WebSocketSource:
    """A broker source for connectors.pump.BrokerPump; see the module doc."""

    type = "websocket"
    decode = staticmethod(decode_payload)  # set by the pump: the @map or this JSON
    decode_many = staticmethod(json_batch_decoder(""))  # set by the pump: per batch

    def __init__(self, key, options, url, position):
        where = f"@source(type='websocket') on {key}"
        self.key, self.url = key, url
        self.batch = integer(options, "batch.size", 1000, where, 1, 100000)
        self._queue = collections.deque()
        self.loop = self._task = None
        self.connects = 0
        self.last_error = None
        self._connected = None

    def open(self):
        self.loop = LoopThread(f"websocket {self.key}")
        self._connected = asyncio.Event()

        async def begin():
            self._connected = asyncio.Event()
            self._task = asyncio.ensure_future(self._receive())
            await asyncio.wait_for(self._connected.wait(), 15)

        try:
            self.loop.run(begin(), 20)
        except BaseException:
            self.close()
            raise

    async def _receive(self):
        while True:
            try:
                async with websockets.connect(self.url, max_size=16 << 20) as ws:
                    self.connects += 1
                    self._connected.set()
                    async for message in ws:
                        self._queue.append(message)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - lost: connect again
                self.last_error = f"{type(exc).__name__}: {exc}"
            await asyncio.sleep(0.5)

    def fetch(self, timeout):
        if not self._queue:
            time.sleep(min(timeout, 0.01))
            if not self._queue:
                return None
        queue = self._queue
        payloads = [queue.popleft() for _ in range(min(len(queue), self.batch))]
        payloads = [p.encode() if isinstance(p, str) else p for p in payloads]
        events, pairs, bad = decode_batch(self, payloads, lambda i: "a message")
        return Fetched(events, bad, None, pairs)

    def ack(self, token):
        """WebSocket has no acknowledgement."""

    def close(self):
        if self.loop is None:
            return
        if self._task is not None:

            async def cancel():
                self._task.cancel()
                try:
                    await self._task
                except BaseException:  # noqa: BLE001 - the cancellation itself
                    pass

            try:
                self.loop.run(cancel(), 5)
            except Exception:  # noqa: BLE001 - closing goes on
                pass
        self.loop.close()

    def describe(self):
        return {
            "type": "websocket",
            "url": shown(self.url),
            "connects": self.connects,
            "last_error": self.last_error,
        }


class WebSocketSink(Sink):
    """`@sink(type='websocket', connection='feed')`."""

    type = "websocket"

    def __init__(self, stream, options, url):
        super().__init__(stream, options)
        self.url = url
        where = f"@sink(type='websocket') on stream {stream}"
        self.timeout = number(self.options, "timeout", 10.0, where)
        self.per_message = integer(self.options, "batch.events", 1, where, 1, 100000)
        self.loop = LoopThread(f"websocket sink {stream}")
        self.ws = None

    async def _send(self, messages):
        if self.ws is None or self.ws.close_code is not None:
            self.ws = await websockets.connect(self.url, open_timeout=self.timeout)
        for m in messages:
            await self.ws.send(m)

    def write_batch(self, events):
        messages = [p.decode() for p in sink_payloads(self, events, self.per_message)]
        try:
            self.loop.run(self._send(messages), self.timeout + 5)
        except (Exception, TimeoutError) as exc:  # noqa: BLE001 - any client error
            self.ws = None
            raise SinkWriteError(
                f"websocket sink {shown(self.url)}: {type(exc).__name__}: {exc}"
            ) from None
        self.written += len(events)

    def close(self):
        if self.ws is not None:
            try:
                self.loop.run(self.ws.close(), 5)
            except Exception:  # noqa: BLE001
                pass
        self.loop.close()

    def describe(self):
        return {**super().describe(), "url": shown(self.url)}
