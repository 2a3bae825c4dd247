"""The window processor base, parameter checking, and `build_window` (which class implements a
window is its entry in cep.catalog.windows).

A window receives CURRENT events and emits, in Siddhi's order, the events it expires (kind
EXPIRED, stamped with the time the expiry was processed) and the events it lets through. Batch
windows emit, per flush, the previous batch as EXPIRED, a RESET event, then the new batch.
Time in playback is each event's timestamp (arrival expires inline); on the wall clock it is
read once per batch. Timers cover idle periods only."""

from cep.catalog import windows as catalog_windows
from cep.engine.expressions import compile_expression, make_function
from cep.engine.processor import Processor
from cep.errors import TypeMismatchError, UnknownWindowError
from cep.model import AttrType, Constant, TimeConstant, Variable

NEVER = -(1 << 62)  # the playback clock before the first event


class WindowEnv:
    """What a window needs from the runtime: the scheduler, whether time is event time,
    whether the plan asked for `@Plan:siddhi('fixed')` (Siddhi 3.2's window bugs fixed), and
    the rank of the window's timers (its place in plan order, see cep.engine.clock)."""

    def __init__(self, scheduler, playback, owner=None, fixed=False):
        self.scheduler, self.playback, self.owner = scheduler, playback, owner
        self.fixed = fixed
        self.rank = scheduler.new_rank() if scheduler is not None else ()


class WindowProcessor(Processor):
    stateful = True
    is_batch = False
    # every EXPIRED event it emits was emitted before as CURRENT, once (so a selector may
    # count a group's events in the window and drop the group when none is left)
    expires_arrivals = False

    def __init__(self, env, args):
        super().__init__()
        self.env = env
        self.args = args  # parsed parameters, shared by clones
        self._timer_due = None
        self.setup(*args)

    def setup(self, *args):
        pass

    @classmethod
    def parse(cls, p):
        """Parse `WindowParams` into the tuple of args `setup` takes."""
        raise NotImplementedError

    def clone(self):
        return type(self)(self.env, self.args)

    # -- time --
    def _schedule(self, due, owned=True):
        """Keep one pending timer, at the earliest `due` asked for. `owned=False` for work the
        window does not also do inline when its stream's events arrive."""
        if self._timer_due is not None and self._timer_due <= due:
            return
        self._timer_due, self._timer_owned = due, owned
        self.env.scheduler.notify_at(
            due,
            self._on_timer_guarded(due),
            owner=self.env.owner if owned else None,
            rank=self.env.rank,
        )

    def _on_timer_guarded(self, due):
        def fire(now):
            if self._timer_due != due:
                return  # superseded by an earlier timer, or state restored
            self._timer_due = None
            self.on_timer(now)

        return fire

    def on_timer(self, now):
        pass

    def now(self):
        return self.env.scheduler.now()

    def clock(self):
        """Where expiry stamps start: the plan clock in playback (each arriving event raises
        it, so callers keep `now = max(now, ts)`; a flush's events keep their old times), the
        wall clock otherwise. Siddhi 3.2 stamps expired rows with the plan's current time."""
        if self.env.playback:
            c = self.env.scheduler.clock
            return NEVER if c is None else c
        return self.env.scheduler.now()

    def emit_at(self, now, chunk):
        """Emit a flush made at `now`. In playback, a batch processed in one call leaves the
        plan clock at its first event; while the flush (whose events keep their old times)
        flows downstream, the clock reads `now`, so what it expires there is stamped `now`."""
        sch = self.env.scheduler
        saved = sch.clock
        if not self.env.playback or saved is None or now <= saved:
            self.next.process(chunk)
            return
        sch.set_clock(now)
        try:
            self.next.process(chunk)
        finally:
            if sch.clock == now:
                sch.restore_clock(saved)

    def late_due(self, due):
        """A timer for a late event (due already passed) fires at the next clock advance; set
        while a clock step runs, it keeps its due time, so it still fires in that step when
        its rank comes later than the timer firing (as a Siddhi scheduler not yet called)."""
        if self.env.playback:
            sch = self.env.scheduler
            c = sch.clock
            if c is not None and due <= c:
                return due if sch.in_step() else c + 1
        return due

    # -- state --
    def get_state(self):
        return {
            "s": self.state_items(),
            "timer": self._timer_due,
            "owned": getattr(self, "_timer_owned", True),
        }

    def set_state(self, state):
        self.load_state_items(state["s"])
        self._timer_due = None
        if state.get("timer") is not None:
            self._schedule(state["timer"], state.get("owned", True))

    def state_items(self):
        return {}

    def load_state_items(self, items):
        pass


class WindowParams:
    """The parameters of `#window.name(...)`, with checks that name the window and position."""

    def __init__(self, window, scope):
        self.window, self.scope = window, scope
        self.params = list(window.params)

    def __len__(self):
        return len(self.params)

    def _fail(self, i, why):
        span = self.params[i].span if i < len(self.params) else self.window.span
        raise TypeMismatchError(f"window {self.window.name}: parameter {i + 1} {why}", span)

    def count(self, lo, hi=None):
        n = len(self.params)
        if n < lo or (hi is not None and n > hi):
            want = f"{lo}" if hi == lo else f"{lo} to {hi}" if hi else f"at least {lo}"
            raise TypeMismatchError(
                f"window {self.window.name} takes {want} parameters, got {n}", self.window.span
            )

    def is_const(self, i):
        return isinstance(self.params[i], (Constant, TimeConstant))

    def int_const(self, i, what="an int"):
        p = self.params[i]
        if isinstance(p, TimeConstant):
            return p.millis
        if not isinstance(p, Constant) or p.type not in (AttrType.INT, AttrType.LONG):
            t = p.type if isinstance(p, Constant) else "an attribute"
            self._fail(i, f"must be {what} constant, got {t}")
        return p.value

    def time(self, i):
        return self.int_const(i, "a time (such as 10 sec) or an int/long")

    def float_const(self, i):
        p = self.params[i]
        if not isinstance(p, Constant) or p.type not in (
            AttrType.INT,
            AttrType.LONG,
            AttrType.FLOAT,
            AttrType.DOUBLE,
        ):
            self._fail(i, "must be a numeric constant")
        return float(p.value)

    def str_const(self, i):
        p = self.params[i]
        if not isinstance(p, Constant) or p.type != AttrType.STRING:
            self._fail(i, "must be a string constant")
        return p.value

    def getter(self, i, types=None):
        """A function row -> value for an attribute (or expression) parameter."""
        c = compile_expression(self.params[i], self.scope)
        if types and c.type not in types:
            self._fail(i, f"must be {' or '.join(map(str, types))}, got {c.type}")
        if c.source.startswith("r[") and c.source[2:-1].isdigit():
            import operator

            return operator.itemgetter(int(c.source[2:-1]))
        return make_function(
            "get", f"def get(r):\n    ts = None\n    return {c.source}\n", c.globals
        )

    def is_attr(self, i):
        return isinstance(self.params[i], Variable)


def build_window(window, scope, env):
    """The WindowProcessor for a model `Window`, as its catalog entry names it."""
    entry = catalog_windows.lookup(window.name, window.namespace)
    if entry is None:
        name = f"{window.namespace}:{window.name}" if window.namespace else window.name
        raise UnknownWindowError(
            f"unknown window type '{name}' (known: {', '.join(sorted(catalog_windows.WINDOWS))})",
            window.span,
        )
    cls = entry.processor_class()
    return cls(env, cls.parse(WindowParams(window, scope)))
