"""The receiver spout (CEP 4.0's EventReceiverSpout): where a plan topology's events enter.

Each task binds a ZeroMQ PULL socket on port 0 (the OS picks the port: no port probing),
registers `host:port` with the manager's endpoint registry for the plan's imported streams,
heartbeats, and emits the event batches CEP workers push to it (cep/protocol/PROTOCOL.md
section 2), one Storm stream per Siddhi stream, rows `(timestamp, *values)`.

Config keys: registry (tcp URL), tenant, plan, streams ({stream id: [attribute names]}),
host (advertised; default the first non-loopback IPv4), bind_host (default host),
heartbeat_interval (s, default 5), max_frames (frames per next_batch, default 64),
max_events (a next_batch stops taking frames once it holds this many events, default 8192:
4,000-event frames must not make 256K-event batches), rcvhwm (frames, default 1000),
tick_ms (default 200; 0 = off): every tick_ms the spout emits `(now_ms,)` on the `_tick`
stream, which the Siddhi bolts subscribe to (all grouping) so that output produced by their
timers (time windows while no input arrives) leaves within a tick.

Frames of version 2 come from a worker's write-ahead log: per receiver id the spout
emits each offset once and in order (receivers/offsets.py), and each batch carries its rows'
lineage (topology/lineage.py): the receiver id and offsets, so every result downstream keeps
an identity that a replay with other batch boundaries cannot shift; `offsets()` is the highest offset
emitted per receiver id, `snapshot()`/`restore(state)` carry them through a checkpoint, and
`request_replay(offsets)` / `commit(offsets)` ask the workers to re-send or trim their logs.
"""

import gc
import logging
import time

import zmq

from cep.security import curve
from cep.protocol.registry_client import Heartbeat
from cep.protocol.registry_group import registry_client  # one registry or a manager group
from cep.protocol.identity import default_host, machine_identity
from cep.protocol.exceptions import BadFrameError
from cep.protocol.frames import decode_logged_batch
from receivers.offsets import ReceiverOffsets
from topology.component import Spout
from topology.lineage import append_run

log = logging.getLogger(__name__)
TICK_STREAM = "_tick"


class ReceiverSpout(Spout):
    """PULL socket -> rows by stream; registered and heartbeating while open."""

    def open(self, context, collector):
        super().open(context, collector)
        cfg = self.config
        self.streams = {s: len(attrs) + 1 for s, attrs in cfg["streams"].items()}
        self.host = cfg.get("host") or default_host()
        self.label = f"[{cfg['tenant']}:{cfg['plan']}:EventReceiverSpout:{context.index}]"
        self.max_frames = int(cfg.get("max_frames", 64))
        self.max_events = int(cfg.get("max_events", 8192))
        self.tick_s = float(cfg.get("tick_ms", 200)) / 1000.0
        self.next_tick = time.monotonic() + self.tick_s
        self.dropped = 0
        # rows from frames without a log position travel on this spout's own lane (not
        # replayed, so only their order matters)
        self.unlogged_key = f"~{context.component_id}:{context.index}"
        self.unlogged_seq = 0
        security = context.security or curve.OFF  # CURVE keys, cluster secret
        ctx = zmq.Context.instance()
        curve.start_authenticator(ctx, security.curve)
        self.sock = ctx.socket(zmq.PULL)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.setsockopt(zmq.RCVHWM, int(cfg.get("rcvhwm", 1000)))
        curve.server(self.sock, security.curve)
        self.port = self.sock.bind_to_random_port(f"tcp://{cfg.get('bind_host') or self.host}")
        self.registry = registry_client(cfg["registry"], security=security)
        self.wal_offsets = ReceiverOffsets(self.label, self.registry.security.secret)
        self.heartbeat = Heartbeat(
            self.registry,
            float(cfg.get("heartbeat_interval", 5.0)),
            kind="receiver",
            tenant=int(cfg["tenant"]),
            plan=cfg["plan"],
            host=self.host,
            port=self.port,
            machine=machine_identity(self.host),
            streams=list(self.streams),
            component=f"{context.topology_name}:{context.component_id}:{context.index}",
        ).start()
        log.info(
            "%s listening on tcp://%s:%s for %s",
            self.label,
            self.host,
            self.port,
            ", ".join(self.streams),
        )
        gc.freeze()  # the task process's long-lived objects: no more scanning them per batch

    def next_batch(self):
        """Drain up to max_frames frames without blocking and emit their rows by stream."""
        by_stream, taken = {}, 0
        for _ in range(self.max_frames):
            try:
                frame = self.sock.recv(zmq.NOBLOCK)
            except zmq.Again:
                break
            taken += self._take(frame, by_stream)
            if taken >= self.max_events:
                break
        for stream, (rows, runs) in by_stream.items():
            if rows:
                self.emit(rows, stream, tuple(runs))
        if self.tick_s > 0 and time.monotonic() >= self.next_tick:
            self.next_tick = time.monotonic() + self.tick_s
            if TICK_STREAM in self.context.outputs:
                self.emit([(int(time.time() * 1000),)], TICK_STREAM)
        return None

    def _take(self, frame, by_stream):
        """Add a frame's well-formed rows to by_stream; returns how many events it held."""
        try:
            stream, events, pos = decode_logged_batch(frame, use_list=False)
        except BadFrameError as exc:
            self._drop(1, f"bad frame: {exc}")
            return 1
        count = len(events)
        if pos is not None:  # from a write-ahead log: each offset once, in order
            skip = self.wal_offsets.admit(pos, len(events))
            if skip is None:
                return count
            events = events[skip:]
            key, first = pos.receiver_id, pos.first_offset + skip
        else:
            key, first = self.unlogged_key, self.unlogged_seq
            self.unlogged_seq += len(events)
        width = self.streams.get(stream)
        if width is None:
            self._drop(len(events), f"stream {stream!r} is not imported by this plan")
            return count
        rows, runs = by_stream.setdefault(stream, ([], []))
        try:
            new = [(ev[0], *ev[1]) for ev in events]
        except (TypeError, IndexError, KeyError):
            new = None
        if new is not None and all(len(r) == width for r in new):
            rows.extend(new)
            append_run(runs, key, first, len(new))
            return count
        self._take_one_by_one(stream, events, width, key, first, rows, runs)
        return count

    def _take_one_by_one(self, stream, events, width, key, first, rows, runs):
        """Fallback for a frame with malformed events: only those are dropped; the lineage
        keeps each good row's own offset."""
        for i, ev in enumerate(events):
            try:
                row = (ev[0], *ev[1])
            except (TypeError, IndexError, KeyError):
                self._drop(1, f"stream {stream!r}: event {ev!r} is not [ts, [values]]")
                continue
            if len(row) != width:
                self._drop(1, f"stream {stream!r}: wrong number of values (expected {width - 1})")
                continue
            rows.append(row)
            append_run(runs, key, first + i, 1)

    def _drop(self, count, why):
        self.dropped += count
        log.warning("%s dropped %d event(s): %s", self.label, count, why)

    # -- write-ahead log offsets --
    def offsets(self):
        """{receiver id: highest offset emitted} over the workers' logs."""
        return dict(self.wal_offsets.last)

    def snapshot(self):
        """What a checkpoint keeps of this spout: the offsets and the workers' URLs."""
        return self.wal_offsets.snapshot()

    def restore(self, state):
        """Take a checkpoint's snapshot back; then request_replay() re-sends what followed."""
        self.wal_offsets.restore(state)

    def replay_from_start(self):
        """No checkpoint to restore (a failure before the first one completed, or a first
        start): take each worker's log from its start (receivers/offsets.py)."""
        self.wal_offsets.from_start = True

    def request_replay(self, offsets=None):
        return self.wal_offsets.request_replay(offsets)

    def commit(self, offsets, wait=False):
        """The workers may delete log segments up to these offsets (a checkpoint completed);
        sent from a background thread unless `wait`."""
        return self.wal_offsets.commit(offsets, wait)

    def close(self):
        self.heartbeat.stop(unregister=True)
        self.registry.close()
        self.sock.close(0)
