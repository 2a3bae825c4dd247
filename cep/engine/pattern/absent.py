"""Non-occurrence states (Siddhi 4), a mixin of StateMachine (nfa.py).

`not S for T` holds `[deadline, partial]` entries: an S that fits kills the partial, and when
the deadline passes (a timer on the runtime's scheduler, or a later event) the partial goes
on, stamped with the time the clock reached. `not S` beside `and` (no `for`) kills the shared
partial when S comes before the partner.

A timed absence as a side of `and` / `or` (Siddhi 4's query guide):
  - `not A for T and B`: no A within T, and B (before or after T). B before the deadline
    waits for it (the match is stamped with the deadline); after it, B completes at once. An A
    before the deadline kills the pair.
  - `not A for T or B`: whichever comes first, B (the match has B) or the deadline without A
    (the match has no B). An A before the deadline fails only the absence: B may still come.
  - `not A for T1 and not B for T2`: both deadlines pass with neither event; either event
    before its deadline kills the pair. With `or`, the first deadline that passes wins.
While the deadline runs, the partial holds WAIT in the absent state's slot (None otherwise);
the pair goes on only once every absence on an `and` has resolved.

`every not S for T`: each period of T without S hands a partial on; an S restarts the period
from its own time."""


class _Wait:
    """Slot marker: the deadline of a logical absent side still runs (one instance, kept
    across snapshots)."""

    __slots__ = ()

    def __reduce__(self):
        return "WAIT"

    def __repr__(self):
        return "WAIT"


WAIT = _Wait()


class AbsentSteps:
    def step_absent(self, i, ts, r):
        items = self.pending[i]
        if not items:
            return
        node = self.s.nodes[i]
        cond = node.cond
        if node.for_millis is None:
            dead = [p for p in items if cond is None or cond(p, r)]
            if dead:
                self.pending[i] = [p for p in items if not any(p is d for d in dead)]
                for p in dead:
                    self._discard(node.partner, p)
            return
        keep = []
        for entry in items:
            due, p = entry
            if due is None:
                entry[0] = due = ts + node.for_millis
                self._arm(due)
            if due <= ts:
                self._absence_passed(i, node, p, due)  # the deadline passed before this event
            elif cond is not None and not cond(p, r):
                keep.append(entry)
            else:
                self._absence_failed(i, node, p, ts, keep)
        self.pending[i] = keep

    def _absence_failed(self, i, node, p, ts, keep):
        """S came before the deadline: the partial dies (an `every` absence starts a new
        period; an `or` leaves the partner to decide)."""
        if node.partner is not None:
            p[node.slot] = None
            if node.op == "and":
                self._discard_side(node.partner, p)
        elif i in node.every_to:
            keep.append([ts + node.for_millis, p])
            self._arm(ts + node.for_millis)

    def _absence_passed(self, i, node, p, now):
        """The deadline of absent node i passed without its event."""
        if node.partner is None:
            self._complete(i, node, p, now)
            return
        other = self.s.nodes[node.partner]
        p[node.slot] = None
        if node.op == "or":
            self._discard_side(node.partner, p)
        elif p[other.slot] is WAIT or (other.kind != "absent" and p[other.slot] is None):
            return  # the partner decides: its own deadline or its arrival completes the pair
        self._complete(i, node, p, now)

    def _discard_side(self, j, p):
        """Withdraw the shared partial p from logical side j (absent or present)."""
        node = self.s.nodes[j]
        if node.kind == "absent" and node.for_millis is not None:
            self.pending[j] = [e for e in self.pending[j] if e[1] is not p]
            p[node.slot] = None
        else:
            self._discard(j, p)

    def _add_absent(self, j, node, p):
        due = None if self.now is None else self.now + node.for_millis
        self.pending[j].append([due, p])
        if node.partner is not None:
            p[node.slot] = WAIT
        self._arm(due)

    def _activate(self, ts):
        """The first event starts the clock of absences waiting from the start."""
        for i in self.s.absent_timed:
            for entry in self.pending[i]:
                if entry[0] is None:
                    entry[0] = ts + self.s.nodes[i].for_millis
        self._arm(self._next_deadline())

    def _due_absences(self, now):
        for i in self.s.absent_timed:
            items = self.pending[i]
            if not items:
                continue
            node, keep = self.s.nodes[i], []
            for entry in items:
                if entry[0] is not None and entry[0] <= now:
                    self._absence_passed(i, node, entry[1], now)
                else:
                    keep.append(entry)
            self.pending[i] = keep

    def _next_deadline(self):
        dues = [e[0] for i in self.s.absent_timed for e in self.pending[i] if e[0] is not None]
        return min(dues) if dues else None

    def _arm(self, due):
        sch = self.s.scheduler
        if sch is None or due is None:
            return
        if self.armed is None or due < self.armed:
            self.armed = due
            sch.notify_at(due, self.on_time, rank=self.s.scheduler_rank)

    def on_time(self, now):
        """Timer: partials whose absence deadline has passed go on (or are emitted)."""
        if self.armed is not None and self.armed <= now:
            self.armed = None
        out = self.out = []
        self.now = now
        self._due_absences(now)
        if self.s.sequence:
            self._reset()
        self._update()
        if out and self.on_output is not None:
            self.on_output(out)
        self._arm(self._next_deadline())
