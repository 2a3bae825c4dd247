"""The receiver spout of the NATS JetStream transport (`topology.transport: nats`).

Instead of a ZeroMQ socket the CEP workers push to, each task reads the plan's inflow stream
(`CEP_IN_<tenant>_<plan>`, subjects `cep.in.<tenant>.<plan>.<stream>`,
connectors/nats_transport.py) through a durable pull consumer of its own
(`cep_in_<tenant>_<plan>_<index>`), and emits the event frames' rows by stream exactly as the
ZeroMQ spout does (receivers/spout.py: its frame decoding, lanes and `_tick` stream).

Positions: the stream sequence of the last message emitted goes into each checkpoint
(`snapshot()` -> `{"nats": seq}`); a restored task starts its consumer again right after the
checkpoint's position, so what it emitted after that checkpoint is read again, in the same
order. Messages are acknowledged (ack-all) only when a checkpoint covering them completes,
so the consumer's acknowledgement floor is the last completed checkpoint's position: a task
that starts without a checkpoint to restore (a first start, or a failure before the first
checkpoint completed) resumes there. Without checkpoints a batch is acknowledged once
emitted (at most once after a failure). With `parallelism` n > 1 every task reads the whole
stream and keeps the messages whose sequence modulo n is its index (each message is emitted
by one task; the positions stay plain numbers).

Config keys: those of receivers/spout.py that do not concern ZeroMQ or the registry
(tenant, plan, streams, max_frames, max_events, tick_ms), nats_connection (the transport
server's name: the launch options carry its URL, see connectors/nats_transport.component_url;
or nats_url), fetch_wait_ms (longest wait for messages when none are ready, default 20)."""

import collections
import logging
import time

import nats.errors
import nats.js.errors
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from connectors.aio import LoopThread
from connectors.connections import shown
from connectors.nats_transport import (
    component_url,
    connect,
    consumer_name,
    ensure_stream,
    inflow_filter,
    inflow_stream,
)
from receivers.spout import TICK_STREAM, ReceiverSpout
from topology.component import Spout

log = logging.getLogger(__name__)
ACK_WAIT_S = 600.0  # unacknowledged messages are redelivered this late (and then skipped)


class NatsReceiverSpout(ReceiverSpout):
    """JetStream durable consumer -> rows by stream; see the module doc."""

    def open(self, context, collector):
        Spout.open(self, context, collector)
        cfg = self.config
        self.tenant, self.plan = int(cfg["tenant"]), cfg["plan"]
        self.streams = {s: len(attrs) + 1 for s, attrs in cfg["streams"].items()}
        self.label = f"[{self.tenant}:{self.plan}:EventReceiverSpout:{context.index}]"
        self.max_frames = int(cfg.get("max_frames", 64))
        self.max_events = int(cfg.get("max_events", 8192))
        self.fetch_wait = float(cfg.get("fetch_wait_ms", 20)) / 1000.0
        self.tick_s = float(cfg.get("tick_ms", 200)) / 1000.0
        self.next_tick = time.monotonic() + self.tick_s
        self.dropped = 0
        self.unlogged_key = f"~{context.component_id}:{context.index}"
        self.unlogged_seq = 0
        self.index, self.parallel = context.index, max(int(context.parallelism), 1)
        self.url = component_url(cfg, context.security)
        self.js_stream = inflow_stream(self.tenant, self.plan)
        self.durable = consumer_name("cep_in", self.tenant, self.plan, self.index)
        self.seq = 0  # stream sequence of the last message emitted (or skipped as not ours)
        self.start_after = None  # restore(): the checkpoint's position
        self.checkpoints = False  # checkpoint_restored() was called: acknowledge on commits
        self.unacked = []  # (seq, msg) of each fetch's last message, until a commit covers it
        self.fetched = self.skipped = 0
        self.held = collections.deque()  # fetched messages not emitted yet (max_events)
        self.sub = self.nc = None
        self.loop = LoopThread(f"nats spout {self.label}")
        log.info(
            "%s reads %s on %s (consumer %s)",
            self.label,
            self.js_stream,
            shown(self.url),
            self.durable,
        )

    # -- checkpoint hooks --
    def checkpoint_restored(self, cid, restarted=False):
        self.checkpoints = True

    def snapshot(self):
        return {"nats": self.seq}

    def restore(self, state):
        if isinstance(state, dict) and state.get("nats") is not None:
            self.start_after = int(state["nats"])

    def replay_from_start(self):
        """No checkpoint to restore: resume at the acknowledgement floor (the open does)."""

    def request_replay(self, offsets=None):
        """Nothing to ask: the consumer starts after the restored position."""

    def checkpoint_complete(self, cid, state):
        """A checkpoint covering `state["nats"]` completed: acknowledge up to there."""
        if isinstance(state, dict) and state.get("nats") is not None:
            self._ack_upto(int(state["nats"]))

    def offsets(self):
        return {self.js_stream: self.seq}

    def commit(self, offsets, wait=False):
        """(ZeroMQ spout's write-ahead-log hook; the NATS positions use checkpoint_complete.)"""

    # -- reading --
    def _subscribe(self):
        self.loop.run(self._open(), 60)

    async def _open(self):
        self.nc = await connect(self.url, f"cep spout {self.label}")
        js = self.nc.jetstream()
        await ensure_stream(js, self.js_stream, [inflow_filter(self.tenant, self.plan)])
        start = self.start_after
        if start is None:  # no checkpoint: the acknowledgement floor of the durable
            try:
                info = await js.consumer_info(self.js_stream, self.durable)
                start = info.ack_floor.stream_seq if info.ack_floor else 0
            except nats.js.errors.NotFoundError:
                start = 0
        try:  # the consumer starts again right after `start`
            await js.delete_consumer(self.js_stream, self.durable)
        except nats.js.errors.NotFoundError:
            pass
        await js.add_consumer(
            self.js_stream,
            ConsumerConfig(
                durable_name=self.durable,
                filter_subject=inflow_filter(self.tenant, self.plan),
                ack_policy=AckPolicy.ALL,
                ack_wait=ACK_WAIT_S,
                max_ack_pending=1_000_000,
                deliver_policy=(DeliverPolicy.BY_START_SEQUENCE if start else DeliverPolicy.ALL),
                opt_start_seq=start + 1 if start else None,
            ),
        )
        self.seq = start or 0
        self.sub = await js.pull_subscribe_bind(self.durable, self.js_stream)
        log.info("%s resumes after stream sequence %d", self.label, self.seq)

    def next_batch(self):
        """Emit the rows of up to max_frames messages, stopping once the batch holds
        max_events events (the rest of a fetch waits for the next call, in order)."""
        if self.sub is None:
            self._subscribe()
        if not self.held:
            self.held.extend(self.loop.run(self._fetch(), self.fetch_wait + 30))
        by_stream, last, taken = {}, None, 0
        while self.held and taken < self.max_events:
            msg = self.held.popleft()
            seq = msg.metadata.sequence.stream
            last = msg
            if seq <= self.seq:  # redelivered: emitted before
                self.skipped += 1
                continue
            self.seq = seq
            if self.parallel > 1 and seq % self.parallel != self.index:
                continue
            self.fetched += 1
            taken += self._take(msg.data, by_stream)
        for stream, (rows, runs) in by_stream.items():
            if rows:
                self.emit(rows, stream, tuple(runs))
        if last is not None:
            if self.checkpoints:
                self.unacked.append((self.seq, last))
            else:
                self.loop.run(last.ack(), 30)
        if self.tick_s > 0 and time.monotonic() >= self.next_tick:
            self.next_tick = time.monotonic() + self.tick_s
            if TICK_STREAM in self.context.outputs:
                self.emit([(int(time.time() * 1000),)], TICK_STREAM)
        return None

    async def _fetch(self):
        try:
            return await self.sub.fetch(self.max_frames, timeout=self.fetch_wait)
        except (nats.errors.TimeoutError, TimeoutError):
            return []

    def _ack_upto(self, seq):
        covered = [m for s, m in self.unacked if s <= seq]
        if not covered:
            return
        self.unacked = [(s, m) for s, m in self.unacked if s > seq]
        self.loop.run(covered[-1].ack(), 30)  # ack-all: covers every earlier message

    def custom_metrics(self):
        return {
            "transport": "nats",
            "position": self.seq,
            "messages": self.fetched,
            "skipped": self.skipped,
            "unacked": len(self.unacked),
            "dropped": self.dropped,
        }

    def close(self):
        try:
            if self.nc is not None:
                self.loop.run(self.nc.close(), 10)  # unacknowledged messages stay in JetStream
        except Exception:  # noqa: BLE001 - closing must go on
            log.debug("%s close failed", self.label, exc_info=True)
        self.loop.close()
