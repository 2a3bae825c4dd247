"""A sliding window (length, time) fused with the aggregating selector it feeds.

The generic chain runs two loops per batch (the window builds a list of expired and current
events, the selector walks it). For the common `S#window.length(n)` / `S#window.time(T)`
followed by aggregates, one generated loop does both: each arriving event first expires what
it pushes out (the EXPIRED body: subtract, and output only if the query wants expired rows),
then adds itself (the CURRENT body). Semantics are exactly those of the two processors
(cep.engine.windows.sliding + cep.engine.selector); the tests run both shapes."""

import re
from collections import deque
from itertools import chain
from dataclasses import dataclass

from cep.engine.aggregation_codegen import _indent
from cep.engine.events import EXPIRED
from cep.engine.expressions import make_function
from cep.engine.processor import Processor
from cep.engine.select_clause import has_aggregators
from cep.engine.windows.base import NEVER
from cep.model import Filter, Window

FUSABLE = ("length", "time", "timelength", "externaltime")
LEAN = True  # tests switch it off to compare the lean length loop with the plain one
# Longer windows keep the plain loop. At length(10000) the lean loop measured 6-20% slower
# at load 20-27, but 5-7% faster in 10 alternating A/B pairs at load 5-8 (2026-11-25 12:09,
# siddhi_compare's workload: 3.04M vs 2.84M ev/CPU-s); at length(10) about 5% faster.
LEAN_MAX = 10000


@dataclass(frozen=True)
class FuseSpec:
    kind: str  # 'length' | 'time' | 'timelength' | 'externaltime'
    param: int  # n or T in ms
    playback: bool
    extra: int = 0  # timeLength: its n; externalTime: the index of its time attribute


def fusable_window(stream, selector):
    """The Window handler when `stream`'s handlers are filters then a length/time window and
    the selector aggregates; else None."""
    hs = stream.handlers
    if (
        not hs
        or not isinstance(hs[-1], Window)
        or hs[-1].namespace
        or hs[-1].name.lower() not in FUSABLE
        or not all(isinstance(h, Filter) for h in hs[:-1])
    ):
        return None
    if selector.order_by or selector.limit is not None:
        return None  # ordering and limits apply per arrival: the plain selector does that
    return hs[-1] if has_aggregators(selector) else None


def build_fused(c, spec):
    """-> (select(batch, S, W, now), expire(S, W, now) or None) from an AggCode. Only
    CURRENT events reach a fused selector (junction events, through filters at most)."""
    c.g["_chain"] = chain
    head = ["_pop = W.popleft", "_push = W.append"]
    expired_body = ["r = _pop()[1]"] + c.body(1)
    current_body = c.body(0)
    # playback: `now` is the plan clock, raised by each arrival; expired rows carry it
    tick = ["    if ts > now:", "        now = ts"] if spec.playback else []
    if spec.kind == "length" and LEAN and spec.param <= LEAN_MAX and lean_length(c):
        body = _lean_length(spec.param, c)
    elif spec.kind == "length" and spec.playback:  # the clock is only read when evicting
        body = (
            [
                "for e in batch:",
                "    ts, r, k = e",
                f"    if len(W) >= {spec.param}:",
                "        if ts > now:",
                "            now = ts",
                "        else:",
                "            ts = now",
            ]
            + _indent(expired_body + ["ts, r, k = e"], 8)
            + ["    elif ts > now:", "        now = ts", "    _push(e)"]
            + _indent(current_body, 4)
        )
    elif spec.kind == "length":
        body = (
            ["for e in batch:", "    ts, r, k = e", f"    if len(W) >= {spec.param}:"]
            + _indent(["ts = now"] + expired_body + ["ts, r, k = e"], 8)
            + ["    _push(e)"]
            + _indent(current_body, 4)
        )
    elif spec.kind == "timelength":  # playback only (cep.engine.query_builder._fuse_spec)
        body = (
            _time_expiry(spec, tick, expired_body)
            + [f"    if len(W) >= {spec.extra}:", "        ts = now"]
            + _indent(expired_body, 8)
            + ["        ts, r, k = e", "    _push(e)"]
            + _indent(current_body, 4)
        )
    elif spec.kind == "externaltime":  # expired rows carry the arrival's time attribute
        i = spec.extra
        body = (
            ["for e in batch:", "    ts, r, k = e", f"    lim = r[{i}] - {spec.param}"]
            + [f"    if W and W[0][1][{i}] <= lim:", f"        ts = r[{i}]"]
            + [f"        while W and W[0][1][{i}] <= lim:"]
            + _indent(expired_body, 12)
            + ["        ts, r, k = e", "    _push(e)"]
            + _indent(current_body, 4)
        )
    elif spec.playback:
        body = _time_expiry(spec, tick, expired_body) + ["    _push(e)"] + _indent(current_body, 4)
    else:
        body = (
            ["ts = now", f"lim = now - {spec.param}", "while W and W[0][0] <= lim:"]
            + _indent(expired_body, 4)
            + ["for e in batch:", "    ts, r, k = e", "    _push(e)"]
            + _indent(current_body, 4)
        )
    fn = _assemble("select", "batch, S, W, now", c, head, body)
    expire = None
    if spec.kind in ("time", "timelength"):
        ebody = ["ts = now", f"lim = now - {spec.param}", "while W and W[0][0] <= lim:"] + _indent(
            expired_body, 4
        )
        expire = _assemble("expire", "S, W, now", c, head, ebody)
    return fn, expire


_PLAIN = re.compile(r"_a\d+|r\[\d+\]")


def _time_expiry(spec, tick, expired_body):
    """The loop head of a playback time window (plain, or with a length): each arrival first
    expires, stamped with the clock, the events `spec.param` ms old or older."""
    return (
        ["for e in batch:", "    ts, r, k = e"]
        + tick
        + [
            f"    lim = now - {spec.param}",
            "    if W and W[0][0] <= lim:",
            "        ts = now",
            "        while W and W[0][0] <= lim:",
        ]
        + _indent(expired_body, 12)
        + ["        ts, r, k = e"]
    )


def lean_length(c):
    """Whether a length window's loop may skip the clock and the deque's pops: expired rows
    are not output (the clock only stamps them), and no statement can raise part-way (every
    output, aggregator argument and group key is an attribute or an aggregate)."""
    sources = [x.source for x in c.compiled + c.keys] + [
        a.arg.source for a in c.aggs if a.arg is not None
    ]
    return EXPIRED not in c.wanted and c.hv is None and all(_PLAIN.fullmatch(x) for x in sources)


def _lean_length(n, c):
    """The batch's first events fill the window; each later one pushes out the event n
    places before it (in the window, then in the batch): pairs by `zip`, no pop, no clock.
    The window (a deque with maxlen n) takes the whole batch at the end."""
    return (
        [
            "_free = max(0, %d - len(W))" % n,
            "for e in (batch[:_free] if _free else ()):",
            "    ts, r, k = e",
        ]
        + _indent(c.body(0), 4)
        + [
            "for e, _x in zip(batch[_free:] if _free else batch, _chain(W, batch)):",
            "    r = _x[1]",
        ]
        + _indent(c.body(1), 4)
        + ["    ts, r, k = e"]
        + _indent(c.body(0), 4)
        + ["W.extend(batch)", "while len(W) > %d:" % n, "    _pop()"]
    )


def _assemble(name, params, c, head, body):
    L = [f"def {name}({params}):"] + _indent(c.prologue() + head, 4) + ["    try:"]
    L += _indent(body, 8) + ["    finally:"] + _indent(c.epilogue(), 8)
    L += _indent(c.result(), 4)
    src = "\n".join(L) + "\n"
    fn = make_function(name, src, c.g)
    fn.source = src
    return fn


class FusedWindowSelector(Processor):
    """`#window.length(n)` or `#window.time(T)` and the selector, as one processor."""

    stateful = True

    def __init__(self, code, spec, scheduler, owner=None, kernel=None, rank=()):
        super().__init__()
        self.code, self.spec, self.scheduler, self.owner = code, spec, scheduler, owner
        self.rank = rank  # of its timers, the window's place in plan order (cep.engine.clock)
        self.state = code.init_state()
        self.window = self._deque()
        self._timer_due = None
        # columnar batches (cep.engine.columnar.sliding): the kernel, and the window as
        # columns while they feed it (None: the window is the row deque)
        self.kernel, self.cwin = kernel, None

    def _deque(self, items=()):
        """A length window's deque drops its oldest event itself when full (at C speed)."""
        return deque(items, maxlen=self.spec.param if self.spec.kind == "length" else None)

    def _now(self):
        sch = self.scheduler
        if self.spec.playback:
            return sch.clock if sch.clock is not None else NEVER
        return sch.now()

    def _rows_mode(self):
        """The columnar window back into the row deque."""
        self.window, self.cwin = self._deque(self.cwin.events()), None

    def process_columns(self, cols):
        """A columnar batch: the kernel's result, or the row loop when it declines."""
        if self.kernel is None:
            self.process(cols.events())
            return
        rows = None
        if self.cwin is None:
            from cep.engine.columnar.window import ColumnarWindow

            rows = self.window
            self.cwin = ColumnarWindow.from_events(cols.definition, rows)
            self.window = self._deque()
        res = self.kernel.run(self.state, self.cwin, cols, self._now())
        if res is None:
            if rows is not None:  # the row window as it was: its very objects (a NaN that
                self.window, self.cwin = rows, None  # min/max's deque holds is found by id)
            self.process(cols.events())
            return
        out, expired = res
        self.cwin.append(cols)
        self.cwin.drop(expired)
        if self.code.expire is not None and self.cwin:
            self._schedule(self._late(self.cwin.first_ts() + self.spec.param))
        if len(out):
            from cep.engine.columnar.stateless import emit

            emit(self, out)

    def process(self, batch):
        if self.cwin is not None:
            self._rows_mode()
        now = self._now()
        out = self.code.fn(batch, self.state, self.window, now)
        if self.code.expire is not None and self.window:
            self._schedule(self._late(self.window[0][0] + self.spec.param))
        if out:
            self.next.process(out)

    def _late(self, due):
        """A late event's timer (due already passed) fires at the next clock advance (or in the
        clock step running, see WindowProcessor.late_due)."""
        clock = self.scheduler.clock if self.spec.playback else None
        if clock is not None and due <= clock and not self.scheduler.in_step():
            return clock + 1
        return due

    def _schedule(self, due):
        if self._timer_due is not None and self._timer_due <= due:
            return
        self._timer_due = due

        def fire(now):
            if self._timer_due == due:
                self._timer_due = None
                self.on_timer(now)

        self.scheduler.notify_at(due, fire, owner=self.owner, rank=self.rank)

    def on_timer(self, now):
        if self.cwin is not None:
            left = self.kernel.expire(self.state, self.cwin, now)
            if left is not None:
                self.cwin.drop(left)
                if self.cwin:
                    self._schedule(self._late(self.cwin.first_ts() + self.spec.param))
                return
            self._rows_mode()
        out = self.code.expire(self.state, self.window, now)
        if self.window:
            self._schedule(self._late(self.window[0][0] + self.spec.param))
        if out:
            self.next.process(out)

    def get_state(self):
        if self.cwin is not None:
            self._rows_mode()
        return {"sel": self.state, "q": list(self.window), "timer": self._timer_due}

    def set_state(self, state):
        self.state, self.window = state["sel"], self._deque(state["q"])
        self.cwin = None
        self._timer_due = None
        if state.get("timer") is not None:
            self._schedule(state["timer"])

    def clone(self):
        return FusedWindowSelector(
            self.code, self.spec, self.scheduler, self.owner, self.kernel, self.rank
        )
