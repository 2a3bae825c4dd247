"""The publisher bolt (CEP 4.0's EventPublisherBolt): sends the exported streams to a CEP worker.

`execute` encodes each batch as one frame `[1, stream, [[ts, [values]], ...]]`
(cep/protocol/PROTOCOL.md) into a bounded queue; a sender thread owns the ZeroMQ PUSH
socket and hands the frames over in order.

- **Slow publisher = backpressure, never loss.** A frame leaves the queue only once ZeroMQ has
  taken it. While the publisher does not take frames the sender waits, the queue fills, and
  `execute` waits for room (buffer_limit events): the topology's bounded links then slow the
  Siddhi bolts, the spout and the worker's inflow buffer, which reports it.
- **Dead publisher = reconnect.** A socket monitor watches the connection; when the publisher
  disconnects (even while the bolt is idle), or no connection comes up within
  connect_timeout, the bolt releases it, asks the registry again (after a failure without the
  same-machine preference, so another worker's publisher is chosen when there is one) and
  sends the queued frames there. Every liveness_check seconds it also asks the registry
  whether its publisher is still live (heartbeating): a worker that hangs with its TCP
  connection open is left too. ZMQ_IMMEDIATE keeps frames from queueing for a peer that is
  not connected.
- **Acknowledged.** The socket is a DEALER: each frame goes out as `[number, frame]` and the
  worker's publisher service (a ROUTER) answers `[number]` once its sinks have taken the
  frame (cumulative: every frame up to that number). A frame stays in the bolt until then:
  when the publisher is left, the frames it has not acknowledged go ahead of the queue to the
  next one (counted in `resent`; a result the lost worker had written but not acknowledged
  is written again there), and a checkpoint holds them beside the queued frames, so a result
  of an event a checkpoint committed is at a worker's sinks, in flight to one, or in the
  checkpoint. They count toward buffer_limit.
- While no worker publisher exists, the bolt keeps asking every retry_interval; frames wait
  in the queue and, once it is full, `execute` waits (backpressure again).

- **Output identity.** Each frame carries (this instance, epoch, first sequence number),
  cep/protocol/frames.py: the epoch is the last checkpoint barrier this instance passed
  (the restored checkpoint after a restore, -1 without checkpoints), the sequence counts the
  stream's events since. A batch with lineage (topology/lineage.py) also carries its runs:
  per input lane the sequence numbers this instance gave its rows (a per-lane counter kept
  in the checkpoint). Lanes are FIFO and routed the same way on replay, so a replayed result
  gets the lane and number it had the first time, whatever the interleaving of the upstream
  instances or the batch boundaries: the worker's deduplication compares those. A `start` notice (restored checkpoint or fresh) goes ahead of
  everything the instance sends, and a `commit` notice follows each completed checkpoint, in
  order with the data, so a worker can count and drop replayed results and commit the output
  of exactly-once sinks.
- **Fence.** On Spark every frame also carries the task's `(driver generation, stage
  attempt)`: a worker refuses the frames of an older attempt than the newest it has seen of
  the topology (publishers/fencing.py), so a stale task on a machine that was cut off while
  the stage ran again elsewhere publishes nothing; when its task learns from the driver that
  it is stale (`superseded()`), the bolt drops its queue and stops sending.

Config keys: registry, tenant, plan, streams ({stream id: [attribute names]}), host,
retry_interval (s between lookups, default 1), connect_timeout (s, default 3),
buffer_limit (events queued in the bolt, default 100000), sndhwm (frames, default 16),
drain_timeout (s cleanup waits for queued frames to go out, default 5), liveness_check (s
between registry checks of the connected publisher, default 5; 0 = off).
"""

import collections
import gc
import logging
import threading
import time

import zmq
from zmq.utils.monitor import recv_monitor_message

from cep.security import curve
from cep.protocol.exceptions import RegistryError
from cep.protocol.registry_group import registry_client  # one registry or a manager group
from cep.protocol.identity import machine_identity
from cep.protocol.frames import COMMIT, START, encode_control, encode_output
from publishers.service import numbered
from topology.component import Bolt
from topology.lineage import total

log = logging.getLogger(__name__)
AVOID_S = 30.0  # a publisher that failed is asked for last this long (the registry's liveness)
_WATCHED = zmq.EVENT_CONNECTED | zmq.EVENT_DISCONNECTED | zmq.EVENT_HANDSHAKE_SUCCEEDED


class PublisherBolt(Bolt):
    """Rows `(ts, *values)` in, msgpack frames out to one worker publisher."""

    def prepare(self, context, collector):
        super().prepare(context, collector)
        cfg = self.config
        self.tenant, self.plan = int(cfg["tenant"]), cfg["plan"]
        self.client_id = f"{context.topology_name}:{context.component_id}:{context.index}"
        self.label = f"[{self.tenant}:{self.plan}:EventPublisherBolt:{context.index}]"
        self.machine = machine_identity(cfg.get("host"))
        self.security = context.security or curve.OFF  # CURVE keys, cluster secret
        # without CURVE the cluster secret gives this plan a token (PLAIN) for the workers'
        # publisher ports; with CURVE or a token a TCP connection is not yet a link: only a
        # handshake with the cluster key or the token
        self.token = (
            curve.plan_token(self.security.secret, self.tenant, self.plan)
            if self.security.curve is None and self.security.secret
            else None
        )
        self.up_event = (
            zmq.EVENT_HANDSHAKE_SUCCEEDED
            if self.security.curve is not None or self.token
            else zmq.EVENT_CONNECTED
        )
        self.registry = registry_client(cfg["registry"], security=self.security)
        # liveness checks run on the sender thread: a registry outage may stall it 0.5 s
        self.checker = registry_client(
            cfg["registry"], timeout=0.5, retries=0, security=self.security
        )
        self.liveness_check = float(cfg.get("liveness_check", 5.0))
        self.retry_interval = float(cfg.get("retry_interval", 1.0))
        self.connect_timeout = float(cfg.get("connect_timeout", 3.0))
        self.buffer_limit = int(cfg.get("buffer_limit", 100000))
        self.sndhwm = int(cfg.get("sndhwm", 16))
        self.drain_timeout = float(cfg.get("drain_timeout", 5.0))
        self.sock = self.monitor = self.connection = self.endpoint = None
        self.connected, self.failed_endpoint = False, None
        self.failed = {}  # endpoint -> when this bolt last failed to reach it
        self.pending = collections.deque()  # (frame, events) not yet taken by ZeroMQ
        self.unacked = collections.deque()  # (number, frame, events) sent, not acknowledged
        self.number = 0  # of the last frame sent (the worker acknowledges up to a number)
        self.pending_events = self.sent = self.reconnects = self.resent = 0
        self.waited_s = 0.0  # time execute() spent waiting for room (backpressure)
        self.epoch, self.seqs = -1, {}  # output identity: epoch and per-stream sequence
        # (driver generation, stage attempt) on Spark: the worker refuses older attempts
        self.fence = (context.generation, context.attempt) if context.generation else None
        self.lane_seqs = {}  # (input lane, stream) -> next sequence number (checkpointed)
        self.started = False  # the start notice is queued: the sender may go
        self.completed = 0  # the last checkpoint whose commit notice was queued
        self._cond = threading.Condition()
        self._closed = threading.Event()
        self._sender = threading.Thread(
            target=self._run, daemon=True, name=f"{self.client_id} sender"
        )
        self._sender.start()
        gc.freeze()  # long-lived objects of the task process: not scanned per batch again

    # -- task thread --
    def execute(self, batch):
        rows = batch.rows
        if not rows:
            return
        if not self.started:  # no checkpoints (no restore call): epoch -1
            self._start(None, checkpoints=False)
        stream = batch.stream
        seq = self.seqs.get(stream, 0)
        self.seqs[stream] = seq + len(rows)
        runs = None
        if batch.lineage is not None and total(batch.lineage) == len(rows):
            runs, lane_seqs = [], self.lane_seqs
            for key, _, n in batch.lineage:
                first = lane_seqs.get((key, stream), 0)
                lane_seqs[(key, stream)] = first + n
                runs.append((key, first, n))
        frame = encode_output(
            stream, [(r[0], r[1:]) for r in rows], self.client_id, self.epoch, seq, runs, self.fence
        )
        with self._cond:
            if self.pending_events >= self.buffer_limit:
                started = time.perf_counter()
                while self.pending_events >= self.buffer_limit and not self._closed.is_set():
                    self._cond.wait(0.1)
                self.waited_s += time.perf_counter() - started
            self.pending.append((frame, len(rows)))
            self.pending_events += len(rows)
            self._cond.notify_all()

    def checkpoint_state(self):
        """A checkpoint's part: the data frames sent and not acknowledged, then those queued;
        notices (0 events) are not re-sent after a restore."""
        with self._cond:
            sent = [[frame, n] for _, frame, n in self.unacked if n]
            return {
                "pending": sent + [[frame, n] for frame, n in self.pending if n],
                "lanes": [[key, stream, seq] for (key, stream), seq in self.lane_seqs.items()],
            }

    def restore_state(self, state):
        """After a failure: send the frames that were queued at the checkpoint first (after
        the start notice, which goes before everything)."""
        self.lane_seqs = {(key, stream): int(seq) for key, stream, seq in state.get("lanes", ())}
        frames = [(bytes(frame), int(n)) for frame, n in state.get("pending", ())]
        with self._cond:
            head = self.pending.popleft() if self.started and self.pending else None
            self.pending.extendleft(reversed(frames))
            if head is not None:
                self.pending.appendleft(head)
            self.pending_events += sum(n for _, n in frames)
            self._cond.notify_all()

    # -- checkpoint hooks (topology/checkpoint/participant.py) --
    def checkpoint_restored(self, cid, restarted=False):
        """The task starts from checkpoint `cid` (None: fresh state, checkpoints on); a commit
        notice of `cid` follows the frames restored from it (their epochs are committed).
        A restart with no checkpoint to restore (a failure before the first one completed)
        says checkpoint 0: the sources replay from their start, so the worker keeps what it
        knows of this bolt's output and recognises the replayed results; only a first start
        (None) makes it forget them."""
        self._start(0 if cid is None and restarted else cid)
        if cid is not None:
            self._queue_notice(encode_control(COMMIT, self.client_id, cid, self.fence))

    def checkpoint_barrier(self, cid):
        """Output from now on belongs to epoch `cid` (committed when a later one completes)."""
        self.epoch, self.seqs = cid, {}

    def checkpoint_completed(self, cid):
        """Checkpoint `cid` is complete: tell the worker, after the output it covers."""
        if cid > self.completed:
            self.completed = cid
            self._queue_notice(encode_control(COMMIT, self.client_id, cid, self.fence))

    def _start(self, cid, checkpoints=True):
        """Queue the start notice ahead of everything; epochs start at the restored checkpoint
        (0 for fresh state, -1 without checkpoints)."""
        self.epoch, self.seqs = (-1 if not checkpoints else cid or 0), {}
        self.completed = max(self.completed, cid or 0)
        with self._cond:
            self.pending.appendleft((encode_control(START, self.client_id, cid, self.fence), 0))
            self.started = True
            self._cond.notify_all()

    def _queue_notice(self, frame):
        with self._cond:
            self.pending.append((frame, 0))
            self._cond.notify_all()

    def superseded(self):
        """This task's stage attempt is not the current one (its task stops): drop what is
        queued, send nothing more."""
        self._closed.set()
        with self._cond:
            self.pending.clear()
            self.unacked.clear()
            self.pending_events = 0
            self._cond.notify_all()

    def custom_metrics(self):
        return {
            "connected": self.connected,
            "endpoint": self.endpoint,
            "sent": self.sent,
            "epoch": self.epoch,
            "committed": self.completed,
            "queued": self.pending_events,
            "unacknowledged": len(self.unacked),
            "resent": self.resent,
            "reconnects": self.reconnects,
            "waited_s": round(self.waited_s, 3),
        }

    def cleanup(self):
        """Let queued frames go out (up to drain_timeout while connected), then release."""
        deadline = time.monotonic() + self.drain_timeout
        while (self.pending or self.unacked) and self.connected and time.monotonic() < deadline:
            time.sleep(0.01)
        if self.pending or self.unacked:
            log.warning(
                "%s closing with %d event(s) not sent or not acknowledged",
                self.label,
                self.pending_events,
            )
        self._closed.set()
        with self._cond:
            self._cond.notify_all()
        self._sender.join(timeout=self.retry_interval + 5)
        self.registry.close()
        self.checker.close()

    # -- sender thread: the only user of the socket --
    def _run(self):
        try:
            while not self._closed.is_set():
                if self.sock is None and not self._connect():
                    self._closed.wait(self.retry_interval)
                    continue
                if self._watch():
                    self._send_next()
        finally:
            self._disconnect(linger_ms=1000)

    def _connect(self):
        """Look up a worker publisher and start connecting; False when none is registered."""
        try:
            ep = self._lookup()
        except RegistryError as exc:
            log.info("%s no CEP publisher yet: %s", self.label, exc)
            return False
        sock = zmq.Context.instance().socket(zmq.DEALER)
        sock.setsockopt(zmq.IMMEDIATE, 1)
        sock.setsockopt(zmq.SNDHWM, self.sndhwm)
        curve.client(sock, self.security.curve)
        if self.token:
            curve.plain_client(sock, self.token)
        self.monitor = sock.get_monitor_socket(_WATCHED)
        sock.connect(ep["endpoint"])
        self.sock, self.endpoint, self.since = sock, ep["endpoint"], time.monotonic()
        return True

    def _lookup(self):
        """The registry's choice (same machine first, then the fewest connections), avoiding
        the publishers this bolt failed to reach within the last liveness window while
        another is live: a dead worker stays registered (and live) until its heartbeats
        are missed, and its endpoint, now without connections, would be the fewest."""
        now = time.monotonic()
        self.failed = {e: t for e, t in self.failed.items() if now - t < AVOID_S}
        avoid = sorted(self.failed)
        ep = self.registry.lookup(
            "publisher", self.tenant, self.plan, machine=self.machine, avoid=avoid
        )
        if ep["endpoint"] in self.failed:  # a registry that does not know `avoid`
            ep = self.registry.lookup("publisher", self.tenant, self.plan)
        return ep

    def _watch(self):
        """Apply monitor events and acknowledgements; False (and disconnected) when the
        publisher is gone."""
        if self.unacked:
            self._take_acks()
        while self.monitor.poll(0):
            event = recv_monitor_message(self.monitor)["event"]
            if event == self.up_event and not self.connected:
                self._on_connected()
            elif event == zmq.EVENT_DISCONNECTED:
                self._fail(f"CEP publisher {self.endpoint} went away")
                return False
        now = time.monotonic()
        if not self.connected and now - self.since > self.connect_timeout:
            self._fail(
                f"no connection to CEP publisher {self.endpoint} within {self.connect_timeout} s"
            )
            return False
        if self.connected and self.liveness_check > 0 and now >= self.next_check:
            self.next_check = now + self.liveness_check
            if not self._still_live():
                self._fail(f"CEP publisher {self.endpoint} is no longer live in the registry")
                return False
        return True

    def _still_live(self):
        """False only when the registry answers and no longer lists the endpoint as live."""
        try:
            live = self.checker.status(self.tenant, self.plan, client=self.client_id)["publishers"]
        except RegistryError:
            return True  # the registry is away; the connection itself looks fine
        return any(ep["endpoint"] == self.endpoint for ep in live)

    def _on_connected(self):
        self.connected, self.failed_endpoint = True, None
        self.failed.pop(self.endpoint, None)
        self.next_check = time.monotonic() + self.liveness_check
        try:
            self.connection = self.registry.connect(
                "publisher", self.tenant, self.plan, self.endpoint, client=self.client_id
            )
        except RegistryError as exc:  # the data path works; the status catches up later
            log.info("%s connect report failed: %s", self.label, exc)
        log.info("%s connected to CEP publisher %s", self.label, self.endpoint)

    def _take_acks(self):
        """Drop the frames the publisher acknowledged (every one up to the number it sent)."""
        top = None
        while True:
            try:
                top = self.sock.recv(zmq.NOBLOCK)
            except zmq.Again:
                break
        if top is None or len(top) != 8:
            return
        upto = int.from_bytes(top, "little")
        with self._cond:
            unacked, freed = self.unacked, 0
            while unacked and unacked[0][0] <= upto:
                freed += unacked.popleft()[2]
            if freed or not unacked:
                self.pending_events -= freed
                self._cond.notify_all()

    def _send_next(self):
        """Hand the oldest queued frame to ZeroMQ, or wait briefly for a frame or for room
        (or, with frames not yet acknowledged, for an acknowledgement)."""
        with self._cond:
            ready = self.pending and self.started
            if not ready and not self.unacked:
                self._cond.wait(0.05)
                ready = self.pending and self.started
            if ready:
                frame, n = self.pending[0]
        if not ready:
            if self.unacked:
                self.sock.poll(5, zmq.POLLIN)  # an acknowledgement is due
            return
        number = self.number + 1
        try:
            self.sock.send_multipart(numbered(number, frame), zmq.NOBLOCK, copy=False)
        except zmq.Again:  # slow or not yet connected: keep the frame, wait for room
            self.sock.poll(50, zmq.POLLOUT)
            return
        self.number = number
        with self._cond:
            self.pending.popleft()
            self.unacked.append((number, frame, n))
            self.sent += n
            self._cond.notify_all()

    def _fail(self, why):
        log.warning(
            "%s %s; %d event(s) queued (%d frame(s) sent and not acknowledged, sent "
            "again to the next publisher); looking up a publisher again",
            self.label,
            why,
            self.pending_events,
            len(self.unacked),
        )
        with self._cond:  # what the publisher did not acknowledge goes first to the next one
            self.resent += sum(n for _, _, n in self.unacked)
            self.pending.extendleft(reversed([(frame, n) for _, frame, n in self.unacked]))
            self.unacked.clear()
            self._cond.notify_all()
        self.failed_endpoint = self.endpoint
        self.failed[self.endpoint] = time.monotonic()
        self.reconnects += 1
        self._disconnect(linger_ms=0)

    def _disconnect(self, linger_ms):
        if self.connection is not None:
            try:
                self.registry.release(self.connection)
            except RegistryError as exc:
                log.info("%s release failed: %s", self.label, exc)
        if self.sock is not None:
            try:
                self.sock.disable_monitor()
            except zmq.ZMQError:
                pass
            self.monitor.close(0)
            self.sock.close(linger_ms)
        self.sock = self.monitor = self.connection = self.endpoint = None
        self.connected = False
