"""The Siddhi bolt: runs the engine on one execution group of a plan topology.

Its config comes from the group's `event-processor` element of the XML query plan: table
definitions, input stream definitions, the queries' text and the output stream definitions.
It compiles them into a small plan, runs an ExecutionPlanRuntime, feeds it each input batch
(rows `(ts, *values)`) and emits the output streams' events as rows of the same shape.

Config keys: plan, tenant, group, table_definitions, window_definitions (the named windows
the group holds), inputs and outputs (lists of
`define stream ...;` texts), queries, playback (bool). A batch on the `_tick` stream only
emits what the runtime's timers produced since the last batch. Checkpoints keep the
engine's snapshot (`checkpoint_state` / `restore_state`, topology/checkpoint/).

Lineage (topology/lineage.py): a batch with lineage is fed to the engine run by run, and what
each run produces leaves on the lane `<input lane>|<component>:<index>`, numbered by a
per-lane counter kept in the checkpoint with the engine. Replayed input thus gives every
result the identity it had the first time, however the batches were cut. Output of the
engine's timer thread leaves on the lane `timer|<component>:<index>`.
"""

import gc
import logging
import threading

from topology.component import Bolt
from topology.lineage import append_run, lane_key

log = logging.getLogger(__name__)


def group_plan_text(cfg):
    """The SiddhiQL text one bolt runs: a plan header, definitions, then the group's queries."""
    header = f"@Plan:name('{cfg['plan']}_{cfg['group']}')"
    if cfg.get("playback"):
        header += "\n@Plan:playback"
    seen, defs = set(), []
    for text in list(cfg.get("inputs", ())) + list(cfg.get("outputs", ())):
        sid = text.split()[2]
        if sid not in seen:
            seen.add(sid)
            defs.append(text)
    parts = [
        header,
        cfg.get("table_definitions") or "",
        *defs,
        cfg.get("window_definitions") or "",
        cfg["queries"],
    ]
    return "\n".join(p for p in parts if p.strip()) + "\n"


def output_ids(cfg):
    return [text.split()[2] for text in cfg.get("outputs", ())]


class SiddhiBolt(Bolt):
    """One ExecutionPlanRuntime per task; output events are emitted on same-named streams."""

    def prepare(self, context, collector):
        super().prepare(context, collector)
        import cep
        from cep.engine.runtime import ExecutionPlanRuntime

        self.label = f"[{self.config['tenant']}:{self.config['plan']}:{context.component_id}]"
        self.text = group_plan_text(self.config)
        if self.config.get("datasources"):  # database tables resolve as on the manager
            from cep.policy.datasources import use_config

            use_config(self.config["datasources"])
        if self.config.get("scripts"):  # the manager's scripts.* settings (script functions)
            from cep.engine import scripts

            scripts.configure(**self.config["scripts"])
        self.runtime = ExecutionPlanRuntime(cep.compile(self.text))
        for table in self.runtime.tables.values():  # limits.table_rows (cep/policy/settings.py)
            table.max_rows = self.config.get("table_rows", 1_000_000)
        self._out, self._lock = [], threading.Lock()
        self._run_out, self._task_thread = None, None  # output of the run being executed
        self.hop = f"{context.component_id}:{context.index}"
        self.timer_key = f"timer|{self.hop}"
        self.lanes = {}  # input lane -> output lane key
        self.seqs = {}  # (output lane, stream) -> next sequence number
        for sid in output_ids(self.config):
            self.runtime.add_callback(sid, self._collect(sid))
        self.handlers = {}
        gc.freeze()  # the task process's long-lived objects (pyspark, the compiled plan) are
        # not scanned again by every collection the per-batch tuples trigger (3x their cost)

    def _collect(self, sid):
        def callback(events):  # may run on the engine's timer thread: buffer, emit in execute
            rows = [(ts, *row) for ts, row in events]
            if self._run_out is not None and threading.get_ident() == self._task_thread:
                self._run_out.append((sid, rows))  # caused by the run being executed
                return
            with self._lock:
                self._out.append((sid, rows))

        return callback

    def execute(self, batch):
        if batch.stream == "_tick":
            self._emit_pending()
            return
        handler = self.handlers.get(batch.stream)
        if handler is None:
            handler = self.handlers[batch.stream] = self.runtime.input_handler(batch.stream)
        self._emit_pending()  # the timer output before this batch
        self._task_thread = threading.get_ident()
        if batch.lineage is None:  # no identities to keep: one call, output as it comes
            self._run_out = []
            try:
                handler.send_batch([(r[0], r[1:]) for r in batch.rows])
                for sid, rows in self._run_out:
                    self.emit(rows, sid)
            finally:
                self._run_out = None
            return
        out = {}  # stream -> (rows, runs)
        rows, at = batch.rows, 0
        try:
            for key, _, n in batch.lineage:
                self._run_out = []
                handler.send_batch([(r[0], r[1:]) for r in rows[at : at + n]])
                at += n
                self._number(self._lane(key), self._run_out, out)
        finally:
            self._run_out = None
        for sid, (out_rows, runs) in out.items():
            self.emit(out_rows, sid, tuple(runs))

    def _lane(self, key):
        lane = self.lanes.get(key)
        if lane is None:
            lane = self.lanes[key] = lane_key(key, *self.hop.rsplit(":", 1))
        return lane

    def _number(self, lane, produced, out):
        """Give the output `produced` on `lane` its sequence numbers; gather it by stream."""
        for sid, rows in produced:
            if not rows:
                continue
            seq = self.seqs.get((lane, sid), 0)
            self.seqs[(lane, sid)] = seq + len(rows)
            got = out.setdefault(sid, ([], []))
            got[0].extend(rows)
            append_run(got[1], lane, seq, len(rows))

    def _emit_pending(self):
        with self._lock:
            pending, self._out = self._out, []
        if not pending:
            return
        out = {}
        self._number(self.timer_key, pending, out)
        for sid, (rows, runs) in out.items():
            self.emit(rows, sid, tuple(runs))

    def checkpoint_state(self):
        """A checkpoint's part of this bolt: the engine's state (windows, patterns, tables,
        clock) and the output its timers produced that is not emitted yet."""
        with self._lock:
            pending = list(self._out)
        return {
            "engine": self.runtime.snapshot(),
            "pending": pending,
            "seqs": [[lane, sid, seq] for (lane, sid), seq in self.seqs.items()],
        }

    def restore_state(self, state):
        """Back to a checkpoint after a failure (same plan: same query text)."""
        self.runtime.restore(state["engine"])
        pending = [(sid, [tuple(r) for r in rows]) for sid, rows in state.get("pending", ())]
        self.seqs = {(lane, sid): int(seq) for lane, sid, seq in state.get("seqs", ())}
        with self._lock:
            self._out = pending + self._out

    def cleanup(self):
        runtime = getattr(self, "runtime", None)  # None: the task failed before prepare()
        if runtime is not None:
            runtime.shutdown()
