"""The task side of checkpoints: one per instance (Spark task or in-process runner).

Components opt in with these methods (all optional; without them an instance stores None):
``checkpoint_state()`` (or ``snapshot()``) returns a msgpack-able value (a Siddhi bolt: its
engine snapshot; a spout: the offsets it emitted), ``restore_state(state)`` (or
``restore(state)``) puts it back after a failure, then a spout's ``request_replay()`` asks the
workers to re-send what followed; a spout's ``checkpoint_complete(checkpoint_id, state)`` (or
``commit(state["offsets"])``) hears that a checkpoint covering that state is complete: the
moment to let the workers trim their write-ahead logs.

Spouts start checkpoint n when the driver asks (``trigger``), between two batches: snapshot,
then the barrier on every output link. Bolts align the barriers of their input channels
(``Aligner``), then snapshot and forward the barrier. The snapshot's synchronous part is the
copy (``checkpoint_state()`` plus msgpack; the engine's part is its pickled bytes); the
compression, checksum and write run on a ``SnapshotWriter`` thread while the task goes on, and
the ack goes out (``poll_acks()``, from the task loop) once the blob is stored.
"""

import logging
import time

from topology.checkpoint.barrier import Aligner, input_channels
from topology.checkpoint.store import open_store, pack, seal
from topology.checkpoint.writer import SnapshotWriter

log = logging.getLogger(__name__)


class Participant:
    """Snapshots, acks and restore of one instance. ``forward()`` sends the barrier on every
    output link; ``ack(report)`` sends the checkpoint report to the coordinator."""

    def __init__(self, instance, topology, options, forward, ack, store=None, asynchronous=True):
        self.instance, self.forward, self.ack = instance, forward, ack
        self.options = options or {}
        self.enabled = float(self.options.get("interval") or 0) > 0 or store is not None
        self.store = store if store is not None or not self.enabled else open_store(self.options)
        self.task = instance.context.task_id
        self.last_trigger = 0
        self.pending = {}  # spouts: checkpoint id -> state, until complete
        self.restored_from = None
        self.aligner = None
        if self.enabled and instance.kind == "bolt":
            self.aligner = Aligner(
                input_channels(topology, self.task), self._process, self._aligned
            )
        self.process = None  # bolts: set by the runtime, called with each data item
        # the asynchronous phase: blobs sealed and written off the task thread
        self.writer = (
            SnapshotWriter(self.store, self.task, instance.label)
            if self.enabled and asynchronous
            else None
        )

    def _process(self, item):
        self.process(item)

    # -- restore --
    def restore(self, cid, restarted=False):
        """Restore the instance's state from complete checkpoint ``cid`` (None: fresh; after
        a restart, a spout then takes its sources from their start)."""
        if not self.enabled:
            return
        hook = getattr(self.instance.component, "checkpoint_restored", None)
        if callable(hook):  # publisher bolts: output epochs; a restart keeps known identities
            hook(cid, restarted=restarted)
        if cid is None:  # no complete checkpoint: fresh state; a restart (a failure before
            # the first checkpoint completed) replays the sources from their start
            start = getattr(self.instance.component, "replay_from_start", None)
            if restarted and start is not None and self.instance.kind == "spout":
                start()
            return
        state = self.store.read(cid, self.task)  # CorruptCheckpointError fails the task
        method = _method(self.instance.component, "restore_state", "restore")
        if method is not None and state is not None:
            method(state)
        replay = getattr(self.instance.component, "request_replay", None)
        if replay is not None and self.instance.kind == "spout":
            replay()
        self.restored_from = cid
        self.last_trigger = cid
        log.info("%s restored checkpoint %s", self.instance.label, cid)

    # -- spouts --
    def trigger(self, cid):
        """A spout starts checkpoint ``cid`` (call between batches)."""
        if not self.enabled or cid is None or cid <= self.last_trigger:
            return
        self.last_trigger = cid
        state = self._snapshot(cid, 0.0)
        if state is not _FAILED:
            self.pending[cid] = state
        for old in sorted(self.pending)[:-16]:  # abandoned checkpoints never complete
            del self.pending[old]

    def completed(self, cid):
        """The coordinator completed ``cid``: tell the spout, forget older states."""
        if cid is not None and self.instance.kind == "bolt":  # publisher bolts commit output
            _notify(self.instance.component, "checkpoint_completed", cid)
        if cid is None or self.instance.kind != "spout":
            return
        done = [c for c in self.pending if c <= cid]
        if not done:
            return
        states = [self.pending.pop(c) for c in sorted(done)]
        if cid not in done:
            return
        try:
            self._commit(cid, states[-1])
        except Exception as exc:  # noqa: BLE001 - the next completion commits again
            log.exception("%s checkpoint_complete(%s) failed", self.instance.label, cid)
            self.instance.metrics.record_error(0, exc, "checkpoint_complete")

    def _commit(self, cid, state):
        component = self.instance.component
        hook = getattr(component, "checkpoint_complete", None)
        if hook is not None:
            hook(cid, state)
        elif hasattr(component, "commit") and isinstance(state, dict) and state.get("offsets"):
            component.commit(state["offsets"])

    # -- bolts --
    def receive(self, channel, item=None, barrier=None):
        self.aligner.receive(channel, item, barrier)

    def _aligned(self, cid, waited):
        self._snapshot(cid, waited)

    def _snapshot(self, cid, waited):
        """Snapshot (the copy, in this thread), forward the barrier, then store and ack: in
        the background with a writer (the task goes on meanwhile; ``poll_acks()`` sends the
        ack once the blob is written), else here. Returns the state (or _FAILED)."""
        started = time.perf_counter()
        report = {
            "type": "checkpoint",
            "id": cid,
            "task": self.task,
            "component": self.instance.context.component_id,
            "index": self.instance.context.index,
            "alignment_ms": round(waited * 1000, 2),
        }
        try:
            method = _method(self.instance.component, "checkpoint_state", "snapshot")
            state = method() if method is not None else None
            packed = pack(state)
        except Exception as exc:  # noqa: BLE001 - reported (the checkpoint fails), not fatal
            self._failed(cid, report, exc)
            return _FAILED
        _notify(self.instance.component, "checkpoint_barrier", cid)  # output epochs
        report["snapshot_ms"] = round((time.perf_counter() - started) * 1000, 2)
        self.forward(cid)  # downstream aligns while this blob is written
        if self.writer is not None:
            self.writer.submit(cid, packed, report, started)
            return state
        try:
            report["bytes"] = self.store.write_blob(cid, self.task, seal(packed))
        except Exception as exc:  # noqa: BLE001 - reported (the checkpoint fails), not fatal
            log.error("%s checkpoint %s failed: %s", self.instance.label, cid, exc)
            report["error"] = f"{type(exc).__name__}: {exc}"
            state = _FAILED
        self.ack(report)
        return state

    def _failed(self, cid, report, exc):
        log.error("%s checkpoint %s failed: %s", self.instance.label, cid, exc)
        report["error"] = f"{type(exc).__name__}: {exc}"
        self.forward(cid)  # downstream aligns even when this snapshot failed
        self.ack(report)

    def poll_acks(self):
        """Send the acks of background writes that finished (call from the task thread)."""
        if self.writer is None:
            return
        for report in self.writer.done():
            if report.get("error"):
                self.pending.pop(report["id"], None)
            self.ack(report)

    def close(self, timeout=5.0):
        """Let background writes finish and send their acks; the writer thread ends."""
        if self.writer is not None:
            self.writer.flush(timeout)
            self.poll_acks()
            self.writer.close(timeout)


_FAILED = object()


def _notify(component, name, cid):
    """Call the component's optional hook ``name(cid)`` (publisher bolts: output epochs and
    exactly-once commits)."""
    hook = getattr(component, name, None)
    if callable(hook):
        hook(cid)


def _method(component, *names):
    """The first of the named methods the component has, or None."""
    for name in names:
        method = getattr(component, name, None)
        if callable(method):
            return method
    return None
