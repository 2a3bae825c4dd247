"""The publisher bolt of the NATS JetStream transport (`topology.transport: nats`).

Everything but the sender is publishers/bolt.py's PublisherBolt: the same output frames with
their identity, start and commit notices, checkpointed queue and backpressure. The sender
publishes the queued frames, in order, on the plan's outflow subject `cep.out.<tenant>.<plan>`
(connectors/nats_transport.py) and takes a frame off the queue only once JetStream confirmed
it. Each data frame carries a `Nats-Msg-Id` made of its identity: publisher, fence (driver
generation and stage attempt), stream, epoch and first sequence number. A frame published
again after a lost confirmation keeps its id, so JetStream stores it once; a replay by a
later stage attempt has another fence and goes through, for the worker's deduplication and
its exactly-once sinks (a restart aborts what they staged after the restored checkpoint, so
the replayed results must reach them). Start and commit notices carry no id.

Config keys: those of publishers/bolt.py (the registry is not used), nats_connection (the
transport server's name: the launch options carry its URL, see
connectors/nats_transport.component_url; or nats_url), publish_timeout (s, default 10)."""

import asyncio
import logging

from cep.protocol.frames import output_identity_key
from connectors.aio import LoopThread
from connectors.connections import shown
from connectors.nats_transport import (
    MSG_ID,
    component_url,
    connect,
    ensure_stream,
    outflow_stream,
    outflow_subject,
)
from publishers.bolt import PublisherBolt

log = logging.getLogger(__name__)
ROUND_FRAMES = 32  # frames published before their confirmations are awaited together


def output_msg_id(frame: bytes):
    """The JetStream message id of an output frame (see the module doc); None for a notice
    or a frame without an identity."""
    return output_identity_key(frame)


class NatsPublisherBolt(PublisherBolt):
    """PublisherBolt whose sender publishes to JetStream; see the module doc."""

    def prepare(self, context, collector):
        cfg = self.config
        self.url = component_url(cfg, context.security)
        self.subject = outflow_subject(cfg["tenant"], cfg["plan"])
        self.js_stream = outflow_stream(cfg["tenant"], cfg["plan"])
        self.publish_timeout = float(cfg.get("publish_timeout", 10.0))
        self.nc = self.js = None
        self.loop = LoopThread(f"nats publisher {cfg['plan']}")
        self.duplicates = 0
        super().prepare(context, collector)  # starts the sender thread (_run below)

    # -- sender thread --
    def _run(self):
        try:
            while not self._closed.is_set():
                if self.js is None and not self._open():
                    self._closed.wait(self.retry_interval)
                    continue
                self._publish_some()
        finally:
            self._shut()

    def _open(self):
        try:
            self.loop.run(self._open_async(), 15)
        except Exception as exc:  # noqa: BLE001 - any client error: try again later
            log.info("%s NATS transport %s not reachable: %s", self.label, shown(self.url), exc)
            return False
        self.connected, self.endpoint = True, f"{shown(self.url)} {self.subject}"
        log.info("%s publishes to %s on %s", self.label, self.subject, shown(self.url))
        return True

    async def _open_async(self):
        nc = await connect(self.url, f"cep publisher {self.client_id}")
        try:
            js = nc.jetstream(publish_async_max_pending=4 * ROUND_FRAMES)
            await ensure_stream(js, self.js_stream, [self.subject])
        except BaseException:
            await nc.close()
            raise
        self.nc, self.js = nc, js

    def _publish_some(self):
        with self._cond:
            if not self.pending or not self.started:
                self._cond.wait(0.05)
                if not self.pending or not self.started:
                    return
            items = [self.pending[i] for i in range(min(len(self.pending), ROUND_FRAMES))]
        try:
            dups = self.loop.run(self._publish(items), self.publish_timeout + 5)
        except Exception as exc:  # noqa: BLE001 - the server or the connection failed
            log.warning(
                "%s NATS publish failed (%s: %s); %d event(s) queued, published again",
                self.label,
                type(exc).__name__,
                exc,
                self.pending_events,
            )
            self.reconnects += 1
            self.connected = bool(self.nc is not None and self.nc.is_connected)
            self._closed.wait(min(self.retry_interval, 0.5))
            return
        self.duplicates += dups
        self.connected = True
        with self._cond:
            if self._closed.is_set():  # superseded(): the queue was dropped meanwhile
                return
            for _ in items:  # nothing else takes from the front: these are the same items
                _, n = self.pending.popleft()
                self.pending_events -= n
                self.sent += n
            self._cond.notify_all()

    async def _publish(self, items):
        futures = []
        for frame, _ in items:
            mid = output_msg_id(frame)
            futures.append(
                await self.js.publish_async(
                    self.subject,
                    frame,
                    headers={MSG_ID: mid} if mid else None,
                    wait_stall=self.publish_timeout,
                )
            )
        acks = await asyncio.wait_for(asyncio.gather(*futures), self.publish_timeout)
        return sum(1 for a in acks if a.duplicate)

    def _shut(self):
        self.connected = False
        try:
            if self.nc is not None and not self.nc.is_closed:
                self.loop.run(self.nc.close(), 10)
        except Exception:  # noqa: BLE001 - closing must go on
            log.debug("%s close failed", self.label, exc_info=True)
        self.loop.close()

    def custom_metrics(self):
        return {**super().custom_metrics(), "transport": "nats", "duplicates": self.duplicates}
