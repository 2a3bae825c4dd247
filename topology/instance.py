"""One running component instance, independent of the transport.

Both the in-process runner (topology.local) and the Spark tasks (topology.task) drive an
Instance: ``poll_spout()`` / ``execute(batch)`` return the routed output as
``[(task id, stream, rows, lineage)]`` (lineage: topology/lineage.py, or None); errors are
counted and logged, never raised, so one bad batch or row never stops its neighbours.
"""

import logging
import time

from topology.component import Batch, Collector, Context
from topology.lineage import row_lineage
from topology.metrics import InstanceMetrics
from topology.routing import build_routes, describe_bad, split_batch

log = logging.getLogger(__name__)


class Instance:
    """A component object with its context, collector, routes and metrics."""

    def __init__(self, topology, component_id, index, task_id, attempt=0, security=None):
        spec = topology.components[component_id]
        self.spec = spec
        self.kind = spec.kind
        self.context = Context(
            topology.name,
            component_id,
            index,
            spec.parallelism,
            task_id,
            spec.outputs,
            dict(topology.config),
            attempt,
            security,
        )
        self.collector = Collector(component_id, spec.outputs)
        self.routes = build_routes(topology, component_id)
        self.metrics = InstanceMetrics(component_id, index, task_id)
        self.component = spec.load_class()(spec.config)
        self.batch_seq = 0
        self.active = True
        self.label = f"[{topology.name}:{component_id}:{index}]"

    def open(self):
        """open() a spout or prepare() a bolt."""
        if self.kind == "spout":
            self.component.open(self.context, self.collector)
        else:
            self.component.prepare(self.context, self.collector)

    def close(self):
        """close() a spout or cleanup() a bolt, logging (not raising) its error."""
        try:
            if self.kind == "spout":
                self.component.close()
            else:
                self.component.cleanup()
        except Exception as exc:  # noqa: BLE001 - a failing cleanup must not hide the stop
            log.exception("%s close failed", self.label)
            self.metrics.record_error(0, exc, "close")

    def set_active(self, active):
        """Call the spout's activate()/deactivate() on a change."""
        if active == self.active:
            return
        self.active = active
        if self.kind == "spout":
            try:
                self.component.activate() if active else self.component.deactivate()
            except Exception as exc:  # noqa: BLE001
                log.exception("%s (de)activate failed", self.label)
                self.metrics.record_error(0, exc, "activate" if active else "deactivate")

    def poll_spout(self):
        """Call next_batch() once; returns (routed output, origin timestamp)."""
        started = time.perf_counter()
        try:
            rows = self.component.next_batch()
            if rows:
                self.collector.emit(rows)
        except Exception as exc:  # noqa: BLE001 - a spout error is counted, not fatal
            self.collector.discard()
            log.exception("%s next_batch failed", self.label)
            self.metrics.record_error(0, exc, "next_batch")
            return [], 0.0
        pending = self.collector.take()
        if pending:
            self.metrics.record_execute(0, time.perf_counter() - started)
        self.batch_seq += 1
        return self._route(pending, self.batch_seq), time.time()

    def execute(self, batch):
        """execute() a bolt on a batch; on error retry row by row to isolate bad rows."""
        self.metrics.received += len(batch.rows)
        started = time.perf_counter()
        try:
            self.component.execute(batch)
        except Exception as exc:  # noqa: BLE001 - isolate the bad rows below
            self.collector.discard()
            return self._execute_rows(batch, exc, started)
        self.metrics.record_execute(len(batch.rows), time.perf_counter() - started)
        return self._route(self.collector.take())

    def _execute_rows(self, batch, first_exc, started):
        """Fallback after a failed batch: each row alone, so one bad row loses only itself."""
        if len(batch.rows) == 1:
            self._row_failed(batch, batch.rows[0], first_exc)
            self.metrics.record_execute(0, time.perf_counter() - started)
            return []
        pending, good = [], 0
        for i, row in enumerate(batch.rows):
            lineage = None if batch.lineage is None else row_lineage(batch.lineage, i)
            try:
                self.component.execute(
                    Batch([row], batch.stream, batch.source, batch.origin_ts, lineage)
                )
                pending.extend(self.collector.take())
                good += 1
            except Exception as exc:  # noqa: BLE001
                self.collector.discard()
                self._row_failed(batch, row, exc)
        self.metrics.record_execute(good, time.perf_counter() - started)
        return self._route(pending)

    def _row_failed(self, batch, row, exc):
        log.warning(
            "%s execute failed on row %r from %s/%s: %s: %s",
            self.label,
            row,
            batch.source,
            batch.stream,
            type(exc).__name__,
            exc,
        )
        self.metrics.record_error(1, exc, f"execute {batch.source}/{batch.stream}")

    def _route(self, pending, batch_id=None):
        """Route buffered emits to task ids; unroutable rows are failed, others go on."""
        out = []
        for stream, rows, lineage in pending:
            self.metrics.emitted += len(rows)
            parts, bad = split_batch(self.routes, stream, rows, lineage)
            for row, exc in bad:
                err = describe_bad(self.context.component_id, stream, row, exc)
                log.warning("%s %s", self.label, err)
                self.metrics.record_error(1, err, f"route {stream}")
            if bad and batch_id is not None:
                self._spout_hook("fail", batch_id, f"{len(bad)} rows not routable")
            out.extend((task, stream, part, runs) for task, part, runs in parts)
        if batch_id is not None and pending:
            self.metrics.acked += 1
            self._spout_hook("ack", batch_id)
        return out

    def _spout_hook(self, name, *args):
        try:
            getattr(self.component, name)(*args)
        except Exception as exc:  # noqa: BLE001
            log.exception("%s %s failed", self.label, name)
            self.metrics.record_error(0, exc, name)
