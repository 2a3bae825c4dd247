"""The less common state kinds of the state machine, as mixins of StateMachine (nfa.py):
counting states (`<n:m>`, `+`, `*`, `?`) and non-occurrence (`not S for T`, `not S and B`).

Count states collect rows into the partial's slot (a list); a partial is handed on once the
minimum is reached (patterns: once, the same partial keeps collecting; sequences: after every
row) and leaves the count state at the maximum. A state after a count state that has taken a
partial makes the count state drop it.

An absent state with `for T` holds `[deadline, partial]` entries: an event that fits kills
the partial, and a timer on the runtime's scheduler hands it on when the deadline passes. An
absent side of `and` (no `for`) kills the shared partial when its event comes first."""



class CountSteps:
    def step_count(self, i, ts, r):
        items = self.pending[i]
        if not items:
            return
        node = self.s.nodes[i]
        keep = []
        within, seq = self.s.within, self.s.sequence
        slot, cond, succ = node.slot, node.cond, self.s.succ_slots[i]
        for p in items:
            start = p[-1]
            if within is not None and start is not None and ts - start > within:
                continue
            if any(p[s] is not None for s in succ):
                continue  # a later state already took this partial
            if self._count_one(i, node, p, ts, r, slot, cond):
                continue
            if not seq:
                keep.append(p)
        self.pending[i] = keep

    def _count_one(self, i, node, p, ts, r, slot, cond):
        """Offer r to count node i; True when p leaves this node's pending list."""
        lst = p[slot]
        if lst is None:
            lst = p[slot] = []
        lst.append(r)
        if cond is not None and not cond(p, r):
            lst.pop()
            if not lst:
                p[slot] = None
            return self.s.sequence
        if p[-1] is None:
            p[-1] = ts
        n = len(lst)
        full = node.max_count is not None and n >= node.max_count
        if n >= node.min_count and (self.s.sequence or n == node.min_count or not node.next):
            self._complete(i, node, p, ts)
        if full:
            return True
        if self.s.sequence:
            self._add(i, p)
            return True
        return False



class AbsentSteps:
    def step_absent(self, i, ts, r):
        """`not S for T` waits out its deadline; `not S` beside `and` guards its partner.
        An S that fits while the partial waits kills the partial."""
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
                self._complete(i, node, p, due)  # the deadline passed before this event
            elif cond is not None and not cond(p, r):
                keep.append(entry)
        self.pending[i] = keep

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
                    self._complete(i, node, entry[1], now)
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
            sch.notify_at(due, self.on_time)

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

