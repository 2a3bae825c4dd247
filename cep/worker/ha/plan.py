"""A standalone plan in an HA pair: the engine's outputs go through the OutputLedger (written
when this node is active, queued when passive), its input is numbered (one sequence per plan,
the order the engine took it in) and, on the active in forward mode, forwarded to the passive
before the receiver answers. `snapshot_state()` / `restore_state()` carry the engine state,
the input and output sequences between the nodes (cep.protocol.frames: HA input and HA state)."""

import hashlib
import logging


from cep.protocol import frames
from cep.protocol.exceptions import BadFrameError
from cep.worker.ha.exceptions import PassiveNodeError, SyncError
from cep.worker.ha.outputs import OutputLedger
from cep.worker.standalone import StandalonePlan, prechecked

log = logging.getLogger(__name__)


def plan_digest(spec):
    """Identifies the plan text (file mtimes differ between machines; the text does not)."""
    text = getattr(spec.plan, "source", None) or repr(spec)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


class HaPlan(StandalonePlan):
    """StandalonePlan whose outputs and input the pair's node (`node`) steers."""

    def __init__(self, spec, router, cfg, node):
        self.node = node
        self.playback = True if cfg["ha.playback"] else None
        self.ledger = OutputLedger([s.stream for s in spec.exported], cfg["ha.queue_events"])
        self.digest = plan_digest(spec)
        self.publishing = False  # set under the lock by the node (promote / demote)
        self.need_sync = False  # the node fetches the active's state for this plan
        self.syncing = False  # input is held in `pending` until the state arrives
        self.pending, self.pending_events, self.pending_dropped = [], 0, 0
        self.in_seq = 0
        self.last_in = {}  # stream -> last event taken (dual-send alignment)
        self.catch_up = {}  # stream -> the snapshot's last event not yet seen again
        self.refused_passive = self.dup_inputs = self.gaps = 0
        self._checked = {s.stream: prechecked(s.definition) for s in spec.imported}
        self.sync_info = {"state": "none"}
        super().__init__(spec, router, cfg)

    @property
    def key(self):
        return f"{self.spec.tenant}/{self.spec.name}"

    def _sink_callback(self, stream):
        dispatch = self.sinks.dispatch

        def callback(events):  # runs in the engine, under self._lock
            self.ledger.emit(stream, list(events), dispatch, self.publishing)

        return callback

    def _deliver_to(self, stream):
        handler = self.runtime.input_handler(stream)

        def deliver(events, wait=0.0):
            if not self.node.takes_input():
                self.refused_passive += len(events)
                raise PassiveNodeError(self.node.refusal())
            with self._lock:
                if self.syncing:
                    self._hold(None, stream, events)
                    return 0
                if stream in self.catch_up:
                    events = self._catching_up(stream, events)
                    if not events:
                        return 0
                self._process(handler, stream, events)
                ticket = self.node.forward(self.key, self.in_seq, stream, events)
            if ticket is not None:
                ticket()  # wait (bounded) until the passive has the batch
            return 0

        return deliver

    def _process(self, handler, stream, events):
        """Run one input batch through the engine (under self._lock)."""
        self.in_seq += 1
        self.last_in[stream] = events[-1]
        try:
            bad = handler.send_batch(events, validated=self._checked[stream])
        except Exception:  # an engine failure must not kill the receiver thread
            self.engine_errors += 1
            log.exception(
                "plan %s: engine failed on a batch of %d %s events",
                self.spec.name,
                len(events),
                stream,
            )
            return
        if bad:
            self.engine_rejected += len(bad)

    def _catching_up(self, stream, events):
        """Dual-send after a sync: drop what the active's snapshot already covered (up to its
        last event of the stream), also when it arrives after the sync ended."""
        rest, passed = past(events, self.catch_up[stream])
        if passed:
            del self.catch_up[stream]
        self.dup_inputs += len(events) - len(rest)
        return rest

    def _hold(self, seq, stream, events):
        self.pending.append((seq, stream, events))
        self.pending_events += len(events)
        while self.pending_events > self.ledger.max_events and self.pending:
            _, _, dropped = self.pending.pop(0)
            self.pending_events -= len(dropped)
            self.pending_dropped += len(dropped)

    # -- forward mode, passive side --
    def apply_forwarded(self, seq, stream, events):
        """A batch the active forwarded (checked there; tuples, as msgpack decodes them with
        use_list=False); False when a gap shows this plan needs a resync."""
        with self._lock:
            if self.syncing or self.need_sync:
                self._hold(seq, stream, events)
                return True
            if seq <= self.in_seq:
                self.dup_inputs += 1
                return True
            if seq != self.in_seq + 1:
                self.gaps += 1
                self.need_sync = True
                log.warning(
                    "plan %s: forwarded input %d after %d: a gap; resyncing",
                    self.key,
                    seq,
                    self.in_seq,
                )
                self._hold(seq, stream, events)
                return False
            self._process(self.runtime.input_handler(stream), stream, events)
            return True

    # -- state sync --
    def snapshot_state(self, attach=None):
        """The plan's state as compressed bytes; `attach(in_seq)` runs under the same lock, so
        everything after the snapshot is forwarded."""
        with self._lock:
            if attach is not None:
                attach(self.in_seq)
            state = {
                "digest": self.digest,
                "engine": self.runtime.snapshot(),
                "in_seq": self.in_seq,
                "seq": self.ledger.seq,
                "published": self.ledger.published,
                "last_in": {s: [e[0], list(e[1])] for s, e in self.last_in.items()},
            }
            return frames.encode_ha_state(state)

    def begin_sync(self):
        with self._lock:
            self.syncing = True

    def restore_state(self, blob):
        """Take the active's state, then the input held meanwhile that it does not cover."""
        try:
            state = frames.decode_ha_state(blob)
        except BadFrameError as exc:
            raise SyncError(f"plan {self.key}: the snapshot is not readable: {exc}") from None
        if state.get("digest") != self.digest:
            raise SyncError(
                f"plan {self.key}: the snapshot is of another plan version "
                f"({state.get('digest')} here {self.digest})"
            )
        with self._lock:
            try:
                self.runtime.restore(state["engine"])
            except Exception as exc:  # noqa: BLE001 - a bad snapshot must not kill the node
                raise SyncError(
                    f"plan {self.key}: the engine refused the snapshot: {type(exc).__name__}: {exc}"
                ) from None
            self.in_seq = int(state["in_seq"])
            self.ledger.reset(state["seq"], state["published"])
            self.last_in = {s: (e[0], tuple(e[1])) for s, e in state["last_in"].items()}
            held, self.pending, self.pending_events = self.pending, [], 0
            self.syncing = self.need_sync = False
            self._replay(held, self.last_in)

    def release_held(self):
        """Take-over (under the lock) before a sync completed, or after a start without an
        active peer: the held input goes through as it is, in the order it came."""
        held, self.pending, self.pending_events = self.pending, [], 0
        self.syncing = self.need_sync = False
        for seq, stream, events in held:
            if seq is None or seq > self.in_seq:
                self._process(self.runtime.input_handler(stream), stream, events)

    def abort_sync(self):
        """The sync failed: keep holding input; the node tries again."""
        with self._lock:
            self.need_sync = True

    def _replay(self, held, last_in):
        """Input held during the sync that the snapshot does not cover, in order."""
        forwarded = sorted((x for x in held if x[0] is not None), key=lambda x: x[0])
        for seq, stream, events in forwarded:
            if seq == self.in_seq + 1:
                self._process(self.runtime.input_handler(stream), stream, events)
            elif seq > self.in_seq + 1:
                self.gaps += 1
                self.need_sync = True
                return
        self.catch_up = dict(last_in)
        for _, stream, events in (x for x in held if x[0] is None):
            if stream in self.catch_up:
                events = self._catching_up(stream, events)
            if events:
                self._process(self.runtime.input_handler(stream), stream, events)

    def status(self):
        out = super().status()
        out["ha"] = {
            **self.ledger.describe(),
            "in_seq": self.in_seq,
            "digest": self.digest,
            "publishing": self.publishing,
            "sync": dict(self.sync_info),
            "syncing": self.syncing or self.need_sync,
            "held_events": self.pending_events,
            "held_dropped": self.pending_dropped,
            "refused_passive": self.refused_passive,
            "dup_inputs": self.dup_inputs,
            "gaps": self.gaps,
        }
        return out

    def start(self):
        super().start()
        self.node.register(self)
        return self

    def stop(self, unregister=True):
        self.node.unregister(self)
        super().stop(unregister)


def past(events, last):
    """(the events after `last`, whether `last` was passed) for one ordered dual-send stream:
    `last` is the active's last event of the stream when it took its snapshot, matched by
    timestamp and values; events before it (earlier timestamps, or its own timestamp before
    the match) are covered by the snapshot."""
    ts, values = last[0], tuple(last[1])
    for j, event in enumerate(events):
        if event[0] > ts:
            return events[j:], True
        if event[0] == ts and tuple(event[1]) == values:
            return events[j + 1 :], True
    return events[:0], False
