"""BuildContext: what every query builder (single-stream, join, pattern, partition) gets.

It holds the plan, the junctions, the tables, the scheduler and the playback flag, builds
selectors and outputs so that every input kind shares them, and keeps the registry of stateful
processors that `snapshot()`/`restore()` walk."""

import math

from cep.catalog import functions
from cep.engine.events import CURRENT, EXPIRED, WANTED_KINDS
from cep.engine.junction import StreamJunction
from cep.engine.output import build_output as _build_output
from cep.engine.processor import link
from cep.engine.ratelimit import build_rate_limiter
from cep.engine.selector import QuerySelector, compile_selector
from cep.errors import DuplicateDefinitionError
from cep.model import Variable


class BuildContext:
    def __init__(self, plan, junctions, tables, scheduler, playback, lock):
        self.plan, self.junctions, self.tables = plan, junctions, tables
        self.siddhi_fixed = getattr(plan, "siddhi_mode", "3.2") == "fixed"  # @Plan:siddhi
        self.scheduler, self.playback, self.lock = scheduler, playback, lock
        self.stateful = {}  # element name -> processor with get_state/set_state
        # True only for the runtime's own context, whose junctions input handlers feed
        # directly: then a window first on a stream may own its timers (see clock.py).
        # Contexts of partitions and the like keep False.
        self.timer_owners = False
        # globals of generated code: currentTimeMillis() is the event time in playback
        self.env = {"_now": (lambda ts: ts) if playback else (lambda ts: scheduler.now())}
        if self.siddhi_fixed:  # stddev: a running sum of squares drifted below 0 gives 0
            self.env["_jsqrt"] = _sqrt_at_least_zero
            self.env.update(functions.fixed_mode_env())  # maximum/minimum

    # -- streams --
    def junction_for(self, stream_id, definition=None):
        """The junction of `stream_id`, created from `definition` when the plan lacks it."""
        j = self.junctions.get(stream_id)
        if j is None:
            if definition is None:
                from cep.errors import UnknownStreamError

                raise UnknownStreamError(f"stream '{stream_id}' is not defined")
            j = self.junctions[stream_id] = StreamJunction(
                definition.__class__(stream_id, definition.attributes)
            )
        return j

    # -- shared query parts --
    def wanted_kinds(self, query):
        if query.rate is not None and query.rate.kind == "snapshot":
            return {CURRENT, EXPIRED}
        return set(WANTED_KINDS[getattr(query.output, "event_type", "current") or "current"])

    def build_selector(
        self,
        query,
        scope,
        input_definition,
        *,
        window=False,
        batch_window=False,
        pre_filter=None,
        fuse=None,
        owner=None,
        drop_empty=False,
    ):
        """A QuerySelector for `query.selector` over rows that `scope` resolves.

        window: events may be EXPIRED (a window feeds it); batch_window: a batch window feeds
        it (one row per flush with aggregates); pre_filter: a filter fused into a selector
        without aggregates; fuse (a cep.engine.fused.FuseSpec): build the window-fused
        selector, whose timers name `owner`; drop_empty: forget emptied groups (only where
        every expired event is an earlier arrival of the same input)."""
        code = compile_selector(
            query.selector,
            scope,
            input_definition,
            self.wanted_kinds(query),
            window=window,
            batch_window=batch_window,
            pre_filter=pre_filter,
            out_id=getattr(query.output, "target", "output"),
            env=self.env,
            fuse=fuse,
            drop_empty=drop_empty,
        )
        if fuse is not None:
            from cep.engine.fused import FusedWindowSelector

            sel = FusedWindowSelector(
                code, fuse, self.scheduler, owner, rank=self.scheduler.new_rank()
            )
        else:
            sel = QuerySelector(code, per_flush=batch_window)
        sel.query = query
        return sel

    def build_output(self, query, out_def, selector=None):
        """The head of `[rate limiter ->] output` for `query`; `selector` (when given) tells
        the rate limiter the group key and whether the query aggregates."""
        end = _build_output(query, self, out_def)
        if query.rate is None:
            return end
        key = self._group_key(query, selector)
        aggregating = bool(selector is not None and selector.code.init_state() is not None)
        windowed = any(type(h).__name__ == "Window" for h in getattr(query.input, "handlers", ()))
        limiter = build_rate_limiter(query.rate, key, self.scheduler, windowed, aggregating)
        return link([limiter, end])

    @staticmethod
    def _group_key(query, selector):
        group = query.selector.group_by
        if not group or selector is None:
            return None
        names = selector.code.names
        idx = [names.index(v.name) for v in group if isinstance(v, Variable) and v.name in names]
        if len(idx) != len(group):
            return None
        if len(idx) == 1:
            i = idx[0]
            return lambda r: r[i]
        return lambda r: tuple(r[i] for i in idx)

    # -- snapshots --
    def register(self, name, processor):
        """Register a stateful processor under a unique, stable element name."""
        if name in self.stateful:
            raise DuplicateDefinitionError(f"two runtime elements are named '{name}'")
        self.stateful[name] = processor


def _sqrt_at_least_zero(x):
    """`@Plan:siddhi('fixed')`'s stddev square root: 0 where Siddhi 3.2's running sum of
    squares drifted below zero (Java's Math.sqrt gives NaN there)."""
    return math.sqrt(x) if x > 0.0 else (0.0 if x == x else x)
