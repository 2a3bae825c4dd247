"""Named windows (`define window W (...) length(10) [output all|current|expired events]`).

One window instance per plan, shared by every reader. W's junction is a `NamedWindowJunction`:
what queries insert into W (and what an input handler sends to it) goes into the window
processor; what the window emits (CURRENT arrivals, EXPIRED rows stamped with the clock, a
batch window's RESET) first updates the window's `contents` and then goes, filtered by the
definition's output event type, to the junction's subscribers: single-stream queries (whose
selectors treat the rows as coming out of a window), join sides (a join probing W looks into
`contents`, and W's emissions probe the other side) and patterns (CURRENT rows only).

Its state (the window processor's and the contents) is one snapshot element, `window:W`."""

from cep.engine.events import CURRENT, EXPIRED, RESET, WANTED_KINDS
from cep.engine.expressions import SingleStreamScope
from cep.engine.join.sides import Contents
from cep.engine.junction import StreamJunction
from cep.engine.processor import Processor
from cep.engine.windows import WindowEnv, build_window
from cep.model import StreamDefinition


class _Emitted(Processor):
    """Where the window emits: keep `contents` in step, then fan out."""

    def __init__(self, junction):
        super().__init__()
        self.junction = junction

    def process(self, chunk):
        j = self.junction
        contents = j.contents
        for ev in chunk:
            kind = ev[2]
            if kind == CURRENT:
                contents.add(ev[1])
            elif kind == EXPIRED:
                contents.remove(ev[1])
            else:
                contents.clear()
        wanted = j.wanted
        if len(wanted) < 2:  # output current events / output expired events
            chunk = [ev for ev in chunk if ev[2] in wanted]
        elif not j.is_batch:
            chunk = [ev for ev in chunk if ev[2] != RESET]
        if chunk:
            StreamJunction.process(j, chunk)


class NamedWindowJunction(StreamJunction):
    """The junction of a named window: `process` feeds the shared window processor."""

    def __init__(self, definition, ctx):
        super().__init__(StreamDefinition(definition.id, definition.attributes))
        self.window_definition = definition
        scope = SingleStreamScope(self.definition, [None])
        scope.tables = ctx.tables
        self.window = build_window(
            definition.window, scope, WindowEnv(ctx.scheduler, ctx.playback, None, ctx.siddhi_fixed)
        )
        self.window.next = _Emitted(self)
        self.is_batch = self.window.is_batch
        self.wanted = WANTED_KINDS[definition.output_event_type or "all"]
        self.contents = Contents()

    def process(self, batch):
        """Rows inserted into the window (as CURRENT events, as a stream would take them),
        one at a time: readers select per chunk the window emits (as Siddhi's do), and a
        chunk per arrival keeps the output independent of how the input was batched."""
        window = self.window
        playback = window.env.playback
        for ev in batch:
            if playback and window._timer_due is not None and window._timer_due <= ev[0]:
                self._fire_timer(ev[0])
            window.process([ev if ev[2] == CURRENT else (ev[0], ev[1], CURRENT)])

    def _fire_timer(self, ts):
        """In playback, the window's timer due by an arrival fires before it, as it would
        had the arrival come alone (a batch is not split at timers made inside it), so its
        expiries form their own chunk, stamped `ts`."""
        window = self.window
        sch = window.env.scheduler
        saved = sch.clock
        window._timer_due = None  # the pending scheduler entry is now stale (guarded)
        if saved is None or ts > saved:
            sch.set_clock(ts)
        try:
            window.on_timer(ts)
        finally:
            if saved is not None and sch.clock == ts and ts > saved:
                sch.restore_clock(saved)

    def process_columns(self, cols):
        self.process(cols.events())

    def subscribe_first(self, processor):
        """A user callback: the rows the window emits, without a batch window's RESET."""
        super().subscribe_first(_KindsOnly(processor, (CURRENT, EXPIRED)))

    def subscribe_callback(self, processor):
        """A user callback: the rows the window emits, without a batch window's RESET."""
        super().subscribe_callback(_KindsOnly(processor, (CURRENT, EXPIRED)))

    def subscribe_current(self, processor):
        """A reader that takes CURRENT rows only (a pattern)."""
        self.subscribe(_KindsOnly(processor, (CURRENT,)))

    def candidates(self, key=None, key_value=None):
        """The rows the window holds, in window order (those whose `key` is `key_value`)."""
        probed = getattr(self.window, "probed", None)
        if probed is not None:  # a batch window's stamps on expiry (see windows/batch.py)
            probed()
        rows = self.contents.candidates()
        if key is None:
            return rows
        return [r for r in rows if key(r) == key_value]

    # -- snapshots (registered as the element `window:<id>`) --
    stateful = True

    def get_state(self):
        return {"window": self.window.get_state(), "rows": self.contents.get_state()}

    def set_state(self, state):
        self.window.set_state(state["window"])  # re-registers its timers
        self.contents.set_state(state["rows"])


class _KindsOnly(Processor):
    def __init__(self, target, kinds):
        super().__init__()
        self.target, self.kinds = target, kinds

    def process(self, batch):
        batch = [ev for ev in batch if ev[2] in self.kinds]
        if batch:
            self.target.process(batch)


def build_named_windows(plan, ctx) -> None:
    """A junction per named window of `plan`, registered for snapshots."""
    for w in plan.windows:
        j = ctx.junctions[w.id] = NamedWindowJunction(w, ctx)
        ctx.register(f"window:{w.id}", j)


def is_named_window(junction) -> bool:
    return isinstance(junction, NamedWindowJunction)
