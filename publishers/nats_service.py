"""The worker's publisher side of the NATS JetStream transport (`topology.transport: nats`):
reads the plan's outflow subject `cep.out.<tenant>.<plan>` (connectors/nats_transport.py)
through the durable consumer `cep_out_<tenant>_<plan>` and hands each output frame to the
plan's SinkSet, as the ZeroMQ publisher service does (publishers/service.py: the same frame
handling, counts and metrics). Each message is acknowledged (explicit acknowledgement) once
its frame was handed to the sinks (and its duplicate marks are durable, when they are kept
on disk: publishers/marks_log.py), so what a worker had not written when it died is
delivered again (after ACK_WAIT_S) to a worker that serves the plan (its deduplication
drops what it recognises).

Workers serving the same plan share the durable consumer, a queue: JetStream hands each
frame to one of them, so the results are split between the workers, not copied. Since each
acknowledges only its own messages, one worker's acknowledgement never covers a frame
another worker fetched and has not written. A gap in a lane's numbers is then normal (the
frames went to another worker): counted (`gaps`), not logged at ERROR. The start/commit
protocol of exactly-once sinks wants one worker per publisher bolt's frames, so a plan with
exactly-once sinks should have one worker with the publisher role under this transport.
(A durable consumer made with ack-all by an earlier version keeps it: then the last message
of a fetch is acknowledged, covering the earlier ones.)"""

import logging
import threading
import time

import nats.errors
from nats.js.api import AckPolicy, ConsumerConfig

from connectors.aio import LoopThread
from connectors.connections import shown
from connectors.nats_transport import (
    SAMPLE_S,
    connect,
    consumer_name,
    ensure_stream,
    outflow_stream,
    outflow_subject,
    stream_report,
)
from publishers.service import PublisherService

log = logging.getLogger(__name__)
FETCH_WAIT_S = 0.1
ACK_WAIT_S = 60.0  # a fetched frame not acknowledged this long goes to a worker again


class NatsPublisherService(PublisherService):
    """A durable JetStream consumer -> SinkSet; `start()`, `stop()`, `metrics()` as
    PublisherService (no port: `port` is None)."""

    ACK_POLICY = AckPolicy.EXPLICIT  # of the durable consumer it makes (see the module doc)

    def __init__(
        self,
        sink_set,
        url: str,
        tenant: int,
        plan: str,
        batch: int = 64,
        ack_wait: float = ACK_WAIT_S,
    ):
        """`ack_wait`: of the durable consumer, when this service creates it."""
        self.sink_set, self.url, self.batch = sink_set, url, batch
        self.ack_wait = ack_wait
        self.subject = outflow_subject(tenant, plan)
        self.js_stream = outflow_stream(tenant, plan)
        self.durable = consumer_name("cep_out", tenant, plan)
        self.port = None
        self.frames = self.events = self.dropped_frames = self.controls = 0
        self.connected, self.last_error = False, None
        self.acked = 0  # events of the frames acknowledged (handed to the sinks)
        self.jetstream = None  # the outflow stream's last stream_report (every SAMPLE_S)
        self._next_sample = 0.0
        self.loop = self.nc = self.sub = None
        self.ack_all = False  # the durable consumer acknowledges all up to a message
        self.sink_set.dedup.lanes.report = False  # gaps: frames other workers took
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, daemon=True, name=f"nats publisher {sink_set.label}"
        )

    def start(self):
        self._thread.start()
        log.info(
            "publisher service %s reads %s on %s",
            self.sink_set.label,
            self.subject,
            shown(self.url),
        )
        return self

    def stop(self):
        self._stop.set()
        self._thread.join(timeout=10)
        self._close()
        self.sink_set.close()

    def _run(self):
        while not self._stop.is_set():
            if self.sub is None and not self._open():
                self._stop.wait(1.0)
                continue
            try:
                msgs = self.loop.run(self._fetch(), FETCH_WAIT_S + 30)
            except Exception as exc:  # noqa: BLE001 - the connection failed: nats-py reconnects
                self.last_error = f"fetch: {type(exc).__name__}: {exc}"
                self._stop.wait(0.5)
                continue
            for msg in msgs:
                self._handle(msg.data)
            if msgs:
                store = self.sink_set.dedup.store  # marks on disk: durable before the ack
                if store is not None:
                    store.wait(store.ticket())
                self.loop.run(self._ack(msgs), 30)
                self.acked = self.events
            if time.monotonic() >= self._next_sample:
                self._sample()

    def _sample(self):
        """Read what the outflow stream holds and how far the workers' consumers are."""
        self._next_sample = time.monotonic() + SAMPLE_S
        try:
            js = self.nc.jetstream()
            self.jetstream = self.loop.run(stream_report(js, self.js_stream, "cep_out_"), 5)
        except Exception as exc:  # noqa: BLE001 - a report is not worth failing the service
            log.debug("publisher service %s: stream report failed: %s", self.subject, exc)

    def _open(self):
        if self.loop is None:
            self.loop = LoopThread(f"nats publisher service {self.sink_set.label}")
        try:
            self.loop.run(self._open_async(), 15)
        except Exception as exc:  # noqa: BLE001 - any client error: try again later
            self.last_error = f"connect: {type(exc).__name__}: {exc}"
            return False
        self.connected = True
        return True

    async def _open_async(self):
        nc = await connect(self.url, f"cep publisher service {self.sink_set.label}")
        try:
            js = nc.jetstream()
            await ensure_stream(js, self.js_stream, [self.subject])
            config = ConsumerConfig(
                ack_policy=self.ACK_POLICY,
                ack_wait=self.ack_wait,
                max_ack_pending=max(8 * self.batch, 1000),
            )
            self.sub = await js.pull_subscribe(
                self.subject, durable=self.durable, stream=self.js_stream, config=config
            )
            info = await js.consumer_info(self.js_stream, self.durable)
            self.ack_all = info.config.ack_policy == AckPolicy.ALL
        except BaseException:
            await nc.close()
            raise
        self.nc = nc

    async def _ack(self, msgs):
        if self.ack_all:
            await msgs[-1].ack()
            return
        for msg in msgs:
            await msg.ack()

    async def _fetch(self):
        try:
            return await self.sub.fetch(self.batch, timeout=FETCH_WAIT_S)
        except (nats.errors.TimeoutError, TimeoutError):
            return []

    def _close(self):
        self.connected = False
        if self.loop is None:
            return
        try:
            if self.nc is not None and not self.nc.is_closed:
                self.loop.run(self.nc.close(), 10)  # unacknowledged frames stay in JetStream
        except Exception:  # noqa: BLE001 - closing must go on
            log.debug("publisher service %s: close failed", self.sink_set.label, exc_info=True)
        self.loop.close()

    def metrics(self):
        return {
            **super().metrics(),
            "transport": "nats",
            "subject": self.subject,
            "acked": self.acked,
            "jetstream": self.jetstream,
            "connected": self.connected,
            "last_error": self.last_error,
        }
