"""A plan run in-process with the engine (standalone mode): receivers feed the engine's input
handlers, the engine's callbacks feed the sinks. No Spark, no manager registry."""

import logging
import threading

from cep.worker.exceptions import PlanDeployError
from cep.worker.plumbing import (
    build_sink_set,
    check_policy,
    start_sources,
    stop_all,
    stream_key,
)

log = logging.getLogger(__name__)


def prechecked(definition):
    """True when the receiver's checks leave events exactly as the engine's would, so the
    engine can skip its own (`send_batch(validated=True)`): every type but float, which the
    engine rounds to 32 bits."""
    from cep.model import AttrType

    return all(a.type is not AttrType.FLOAT for a in definition.attributes)


class StandalonePlan:
    """One compiled plan running on the engine, with its sources and sinks."""

    mode = "standalone"
    playback = None  # None: the plan's @Plan:playback (an HA pair runs on event time)

    def __init__(self, spec, router, cfg):
        from cep.engine.runtime import ExecutionPlanRuntime

        if spec.plan is None:
            raise PlanDeployError(f"plan {spec.name}: standalone mode needs the compiled plan")
        self.spec, self.router, self.cfg = spec, router, cfg
        self._lock = threading.Lock()
        check_policy(spec, cfg)
        self.sinks = build_sink_set(cfg, spec)
        try:
            self.runtime = ExecutionPlanRuntime(spec.plan, self.playback)
        except Exception as exc:
            self.sinks.close()
            raise PlanDeployError(f"plan {spec.name}: the engine rejected it: {exc}") from exc
        for table in self.runtime.tables.values():  # the host policy's limits.table_rows
            table.max_rows = cfg["limits.table_rows"]
        for s in spec.exported:
            self.runtime.add_callback(s.stream, self._sink_callback(s.stream))
        self.sources = []
        self.engine_errors = 0
        self.engine_rejected = 0

    def _sink_callback(self, stream):
        dispatch = self.sinks.dispatch

        def callback(events):
            dispatch(stream, events)

        return callback

    def _deliver_to(self, stream):
        handler = self.runtime.input_handler(stream)
        checked = prechecked(self.runtime.junctions[stream].definition)

        def deliver(events, wait=0.0):
            with self._lock:
                try:
                    bad = handler.send_batch(events, validated=checked)
                except Exception:  # an engine failure must not kill the receiver thread
                    self.engine_errors += 1
                    log.exception(
                        "plan %s: engine failed on a batch of %d %s events",
                        self.spec.name,
                        len(events),
                        stream,
                    )
                    return 0
            if bad:
                self.engine_rejected += len(bad)
                log.warning(
                    "plan %s: the engine rejected %d %s events, first: %s",
                    self.spec.name,
                    len(bad),
                    stream,
                    bad[0][1],
                )
            return 0

        return deliver

    def start(self):
        for s in self.spec.imported:
            self.router.register(
                stream_key(self.spec, s.stream), s.definition, self._deliver_to(s.stream)
            )
        self.sources = start_sources(self.spec, self.router, self.cfg)
        return self

    def stop(self, unregister=True):
        self.router.unregister_plan(str(self.spec.tenant), self.spec.name)
        stop_all(self.sources)
        with self._lock:
            self.runtime.shutdown()
        self.sinks.close()

    def status(self):
        return {
            "mode": self.mode,
            "version": self.spec.version,
            "state": "ACTIVE",
            "imported": [s.stream for s in self.spec.imported],
            "exported": self.sinks.metrics(),
            "engine_errors": self.engine_errors,
            "engine_rejected": self.engine_rejected,
            "events_failed": self.runtime.failed_events(),
            "sources": [s.describe() for s in self.sources],
        }
