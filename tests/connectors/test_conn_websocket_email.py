"""@source/@sink(type='websocket') against a real WebSocket server (the `websockets`
library's, on a free port), and @sink(type='email') against a real local SMTP server
(aiosmtpd): every event arrives, a bad message is counted."""

import asyncio
import json
import threading

import pytest
import websockets

from publishers.exceptions import SinkWriteError
from publishers.sinks import build_sink
from receivers.sources import build_source
from tests.conftest import free_port
from tests.connectors.conftest import KEY, wait_for


class EchoHub:
    """A WebSocket server: what one client sends is sent to every other client."""

    def __init__(self):
        self.port, self.clients = free_port(), set()
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        threading.Thread(target=self._main, daemon=True).start()
        assert self.ready.wait(10)

    def _main(self):
        asyncio.set_event_loop(self.loop)

        async def handler(ws):
            self.clients.add(ws)
            try:
                async for message in ws:
                    for other in list(self.clients):
                        if other is not ws:
                            try:
                                await other.send(message)
                            except websockets.ConnectionClosed:
                                pass  # that client went away; this one's messages go on
            except websockets.ConnectionClosed:
                pass  # a client went away
            finally:
                self.clients.discard(ws)

        async def serve():
            self.server = await websockets.serve(handler, "127.0.0.1", self.port)
            self.ready.set()
            await self.server.wait_closed()

        self.loop.run_until_complete(serve())

    def close(self):
        self.loop.call_soon_threadsafe(self.server.close)


@pytest.fixture
def hub():
    h = EchoHub()
    yield h
    h.close()


def test_websocket_events_out_and_in(hub, router, taken):
    url = f"ws://127.0.0.1:{hub.port}/ticks"
    pump = build_source({"type": "websocket", "url": url}, router, KEY).start()
    out = build_sink({"type": "websocket", "options": {"url": url}}, "Ticks")
    try:
        assert wait_for(lambda: len(hub.clients) == 1)
        out.write_batch([(1000 + i, [i, 0.5]) for i in range(300)])
        from websockets.sync.client import connect

        with connect(url) as raw:  # through the hub to the source (and the sink's client)
            raw.send("not json")
        out.write_batch([(2000, [300, 0.5])])
        assert wait_for(lambda: len(taken.ids()) == 301 and pump.bad_payloads == 1), (
            len(taken.ids()),
            pump.bad_payloads,
            pump.describe(),
        )
        assert taken.ids() == list(range(301)) and out.written == 301
    finally:
        out.close()
        pump.stop()


def test_websocket_sink_to_no_server_is_a_write_error():
    out = build_sink(
        {"type": "websocket", "options": {"url": f"ws://127.0.0.1:{free_port()}/", "timeout": "2"}},
        "Ticks",
    )
    try:
        with pytest.raises(SinkWriteError, match="websocket sink ws://127.0.0.1"):
            out.write_batch([(1, [1, 1.0])])
    finally:
        out.close()


def test_email_sink_sends_one_message_per_event():
    from aiosmtpd.controller import Controller
    from aiosmtpd.handlers import Sink as SmtpSink

    class Keep(SmtpSink):
        def __init__(self):
            self.envelopes = []

        async def handle_DATA(self, server, session, envelope):
            self.envelopes.append(envelope)
            return "250 OK"

    handler = Keep()
    port = free_port()
    controller = Controller(handler, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        out = build_sink(
            {
                "type": "email",
                "options": {
                    "url": f"smtp://127.0.0.1:{port}",
                    "to": "ops@example.com, dev@example.com",
                    "from": "cep@example.com",
                    "subject": "alert on {stream}",
                },
            },
            "Alerts",
        )
        out.write_batch([(1000, ["IBM", 75.5]), (1001, ["WSO2", 55.0])])
        assert out.written == 2 and len(handler.envelopes) == 2
        env = handler.envelopes[0]
        assert env.mail_from == "cep@example.com"
        assert env.rcpt_tos == ["ops@example.com", "dev@example.com"]
        text = env.content.decode()
        assert "Subject: alert on Alerts" in text
        body = text.split("\r\n\r\n", 1)[1].strip()
        assert json.loads(body) == {"stream": "Alerts", "timestamp": 1000, "data": ["IBM", 75.5]}
    finally:
        controller.stop()
