"""ExecutionPlanRuntime: builds a compiled plan's junctions, tables and queries, and is the
public API (input handlers, callbacks, time, snapshots)."""

import threading
from typing import Any, Callable, Optional, Union

from cep.catalog import scripts as catalog_scripts
from cep.engine import snapshot as snap
from cep.engine.clock import Scheduler
from cep.engine.context import BuildContext
from cep.engine.join import build_join_query
from cep.engine.junction import CallbackSink, InputHandler, StreamJunction
from cep.engine.named_window import build_named_windows
from cep.engine.partition import build_partition
from cep.engine.pattern import build_state_query
from cep.engine.query_builder import build_single_query
from cep.engine.scripts import build_functions, close_functions
from cep.engine.table import build_table
from cep.engine.trigger import build_trigger
from cep.errors import UnknownInputStreamError
from cep.model import (
    ExecutionPlan,
    JoinInputStream,
    Partition,
    Query,
    SingleInputStream,
    StateInputStream,
)
from cep.model.definitions import StreamDefinition

# the builder of each kind of multi-stream query input
_QUERY_BUILDERS: dict[type, Callable[[Query, BuildContext], None]] = {
    JoinInputStream: build_join_query,
    StateInputStream: build_state_query,
}


class ExecutionPlanRuntime:
    """A running execution plan. `playback` overrides the plan's `@Plan:playback`."""

    def __init__(self, plan: ExecutionPlan, playback: Optional[bool] = None) -> None:
        self.plan = plan
        self.playback = bool(plan.playback if playback is None else playback)
        self.lock = threading.RLock()
        self.scheduler = Scheduler(self.playback, self.lock)
        self.junctions = {s.id: StreamJunction(s) for s in plan.streams}
        for t in plan.triggers:
            self.junctions[t.id] = StreamJunction(StreamDefinition(t.id, t.attributes))
        self.tables: dict[str, Any] = {}
        self.ctx = BuildContext(
            plan, self.junctions, self.tables, self.scheduler, self.playback, self.lock
        )
        self.ctx.timer_owners = True
        self._handlers: dict[str, InputHandler] = {}
        self.script_functions: dict[str, Any] = build_functions(plan) if plan.functions else {}
        try:
            with catalog_scripts.in_scope(self.script_functions):
                self._build()
        except BaseException:
            close_functions(self.script_functions)
            raise
        if self.script_functions:  # a failing script call drops one event, not its batch
            for j in self.junctions.values():
                j.one_by_one = True

    def _build(self) -> None:
        ctx: Any = self.ctx  # BuildContext's attributes are not annotated
        for t in self.plan.tables:
            self.tables[t.id] = build_table(t, ctx)
        taken = {e.name for e in self.plan.elements if isinstance(e, Query) and e.name}
        build_named_windows(self.plan, ctx)
        for i, element in enumerate(self.plan.elements):
            ctx.element_name = name = self._element_name(element, i)
            if name in taken and not (isinstance(element, Query) and element.name):
                name = ctx.element_name = f"{name}#{i}"  # an unnamed query: not an @info name
            if not isinstance(element, Query):
                build_partition(element, ctx)
            elif isinstance(element.input, SingleInputStream):
                build_single_query(element, ctx, name)
            else:
                _QUERY_BUILDERS[type(element.input)](element, ctx)
        for trigger in self.plan.triggers:
            build_trigger(trigger, ctx)

    @staticmethod
    def _element_name(element: Union[Query, Partition], index: int) -> str:
        name = element.name if isinstance(element, Query) else None
        return name or f"{'query' if isinstance(element, Query) else 'partition'}{index}"

    # -- public API --
    def input_handler(self, stream_id: str) -> InputHandler:
        """The InputHandler of a stream (raises UnknownInputStreamError)."""
        h = self._handlers.get(stream_id)
        if h is None:
            j = self.junctions.get(stream_id)
            if j is None:
                raise UnknownInputStreamError(
                    f"stream '{stream_id}' is not in the plan (streams: "
                    f"{', '.join(sorted(self.junctions))})"
                )
            h = self._handlers[stream_id] = InputHandler(j, self.scheduler, self.lock)
        return h

    def add_callback(
        self,
        stream_id: str,
        fn: Callable[[Any], object],
        columnar: bool = False,
        events: bool = False,
    ) -> None:
        """Call `fn([(timestamp, row), ...])` with every batch inserted into `stream_id`;
        with `columnar=True`, `fn(columns)` with a cep.engine.columnar.Columns per batch
        (`.timestamps`, `columns["attr"]`, `.null_mask("attr")`, `.to_rows()`); with
        `events=True`, `fn` gets the engine's own `(timestamp, row, 0)` tuples of each batch
        (no copy into pairs; for in-process encoders; `fn` must not keep or change the list)."""
        j = self.junctions.get(stream_id)
        if j is None:
            raise UnknownInputStreamError(f"stream '{stream_id}' is not in the plan")
        j.subscribe_callback(CallbackSink(fn, columnar, j.definition, events))

    def advance_time(self, ts: int) -> None:
        """Playback: move the clock to `ts`, firing every timer due by then."""
        with self.lock:
            self.scheduler.advance(ts)

    def snapshot(self) -> bytes:
        """The whole runtime state as versioned bytes."""
        with self.lock:
            states = {name: p.get_state() for name, p in self.ctx.stateful.items()}
            data: bytes = snap.dump({"clock": self.scheduler.get_state(), "elements": states})
            return data

    def restore(self, data: bytes) -> None:
        """Replace the runtime state with a snapshot of the same plan."""
        with self.lock:
            states = snap.load(data, self.ctx.stateful)
            self.scheduler.set_state(states["clock"])  # drops pending timers
            for name, state in states["elements"].items():
                self.ctx.stateful[name].set_state(state)  # re-registers its timers

    def failed_events(self) -> int:
        """How many events queries dropped because processing them failed (a script
        function threw or ran past a cap), over all streams."""
        return sum(j.failed for j in self.junctions.values())

    def shutdown(self) -> None:
        self.scheduler.stop()
        for table in self.tables.values():
            table.close()  # a database table returns its connection
        close_functions(self.script_functions)
