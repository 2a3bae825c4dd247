"""The pattern/sequence state machine: partial matches moving through flattened state nodes.

A partial match is a list `p` of one slot per state plus a time at `p[-1]` (None until its
first event; see below). Semantics follow Siddhi 3's pre/post state processors:
  - an event is offered to the nodes of its stream, last node first; what a node hands on only
    becomes visible to the next node after the event (`new` -> `pending`), so one event never
    fills two consecutive states;
  - patterns keep a waiting partial when the event does not fit; sequences drop it, and after
    each event of the query's streams every node's pending list is cleared (strict
    contiguity), the start node getting a fresh partial again;
  - in sequences a node accepts at most one handed-on partial per event (first wins);
  - `within W` (Siddhi 3.2) bounds the last state(s) only: a partial there whose last event
    is more than W ms older than the event is dropped (inclusive; a partial with no event
    counts from -1, as Siddhi's unset timestamp); a periodic sweep keeps memory bounded.
`p[-1]` holds the time of the partial's last event.
Waiting partials of a pattern node whose condition has `attr == <earlier state expr>` sit in a
dict keyed by that expression, so an event only looks at its own key's partials.
"""

from collections import deque

from cep.engine.events import CURRENT
from cep.engine.pattern.absent import WAIT, AbsentSteps
from cep.engine.pattern.kinds import CountSteps, last_time
from cep.engine.pattern.plan import ABSENT, COUNT, LOGICAL
from cep.engine.pattern.ranged import RangedSteps
from cep.engine.pattern.scoped import ScopedSteps


def fitting(node, partials, r):
    """The waiting partials (in order) whose condition the event row `r` meets at `node`."""
    if node.hits is not None:
        return node.hits(partials, r)
    cond = node.cond
    if cond is not None:
        return [p for p in partials if cond(p, r)]
    return list(partials)


class StateMachine(CountSteps, AbsentSteps, RangedSteps, ScopedSteps):
    """Partial-match state of one pattern or sequence query (one per partition key)."""

    def __init__(self, shared):
        self.s = shared
        self.pending = [{} if indexed else [] for indexed in shared.indexed]
        self.new = [[] for _ in shared.indexed]
        self.touched = set()  # nodes whose `new` list is not empty
        self.expiry = deque()  # (start, node, key, partial) as filed in indexed nodes
        self.seq = 0  # filing order of range-sorted partials
        self.emitted = False
        self.last_sweep = None
        self.now = None  # time of the event (or timer) being processed
        self.seen = {}  # stream id -> time of its last event (see CountSteps._revive_check)
        self.stream = None  # stream of the event being processed
        self.armed = None  # earliest absence deadline a timer is set for
        self.on_output = None  # where timer-driven matches go (set by the processor)
        self._init_start()

    # -- lifecycle ------------------------------------------------------------------------
    def clone(self):
        """A fresh machine sharing the compiled nodes (used per partition key)."""
        return StateMachine(self.s)

    def get_state(self):
        return {
            "pending": self.pending,
            "new": self.new,
            "emitted": self.emitted,
            "last_sweep": self.last_sweep,
            "expiry": self.expiry,
            "seq": self.seq,
            "seen": self.seen,
        }

    def set_state(self, state):
        self.pending, self.new = state["pending"], state["new"]
        self.touched = {i for i, items in enumerate(self.new) if items}
        self.emitted, self.last_sweep = state["emitted"], state["last_sweep"]
        self.expiry = state["expiry"]
        self.seq = state["seq"]
        self.seen = state.get("seen", {})
        self.armed = None
        self._arm(self._next_deadline())  # a restored scheduler has no timers

    def pending_count(self):
        """How many partial matches are waiting (for tests and memory checks)."""
        total = 0
        for pend in self.pending:
            total += sum(len(b) for b in pend.values()) if isinstance(pend, dict) else len(pend)
        return total + sum(len(x) for x in self.new)

    def _init_start(self):
        p = [None] * self.s.width
        if self.s.simple_starts:  # plain stream states: nothing is indexed before them
            for i in self.s.starts:
                self.pending[i].append(p)
            return
        for _ in range(self.s.start_copies):
            p = [None] * self.s.width
            for i in self.s.starts:
                self._add(i, p)
        self._update()

    # -- per batch ------------------------------------------------------------------------
    def process(self, stream_id, batch, out):
        """Feed `batch` (events of `stream_id`) and append matches `(ts, slots, 0)` to out."""
        order = self.s.order_by_stream.get(stream_id)
        if not order:
            return
        if self.s.linear_run is not None:
            self.stream = stream_id
            self.s.linear_run(self, batch, out)
            return
        self.out = out
        last = batch[-1][0] if batch else None
        gate = self.s.gates.get(stream_id)
        if gate is not None:
            batch = gate(batch)
        steps = self.s.steps
        within = self.s.within
        sequence = self.s.sequence
        self.stream = stream_id
        seen = self.seen
        for ts, r, kind in batch:
            if kind != CURRENT:
                continue
            if self.now is None and self.s.absent_timed:
                self._activate(ts)
            self.now = ts
            if self.s.scoped:
                self._expire_groups(ts)
            for i in order:
                steps[i](self, i, ts, r)
            seen[stream_id] = ts
            if sequence:
                self._reset()
            self._update()
            if within is not None:
                if self.last_sweep is None:
                    self.last_sweep = ts
                elif ts - self.last_sweep > within:
                    self._sweep(ts)
        if within is not None and self.expiry and last is not None:
            self._expire(last - within)

    # -- node behaviour -------------------------------------------------------------------
    def step_keyed(self, i, ts, r):
        """step_stream for an indexed pattern state with no logical partner (the hot path)."""
        node = self.s.nodes[i]
        key = node.row_key(r)
        if key is None:
            return
        pend = self.pending[i]
        bucket = pend.get(key)
        if not bucket:
            return
        hit = fitting(node, bucket, r)
        within = node.within
        if within is not None and hit:
            limit = ts - within
            hit = [p for p in hit if p[-1] >= limit]  # filed: never None (see _file)
        if not hit:
            return
        slot = node.slot
        if node.next or node.every_to:
            for p in hit:
                p[slot] = r
                p[-1] = ts
                self._complete(i, node, p, ts)
        else:
            out, make = self.out, self.s.make_row
            for p in hit:
                p[slot] = r
                out.append((ts, make(p), CURRENT))
            self.emitted = True
        keep = [p for p in bucket if p[slot] is None]
        if keep:
            pend[key] = keep
        else:
            del pend[key]

    def step_stream(self, i, ts, r):
        node = self.s.nodes[i]
        pend = self.pending[i]
        if node.row_key is not None:
            key = node.row_key(r)
            if key is None:
                return
            bucket = pend.get(key)
            if not bucket:
                return
            keep = self._scan_stream(i, node, bucket, ts, r)
            if keep:
                pend[key] = keep
            else:
                del pend[key]
            return
        if pend:
            self.pending[i] = self._scan_stream(i, node, pend, ts, r)

    def _scan_stream(self, i, node, items, ts, r):
        """Complete the partials the event fits (in order); return those still waiting."""
        hit = fitting(node, items, r)
        within = node.within
        live = hit
        if within is not None and hit:
            limit = ts - within
            live = [p for p in hit if last_time(p) >= limit]
        slot = node.slot
        g = node.scope.time_slot if node.scope is not None else -1
        for p in live:
            p[slot] = r
            if p[g] is None:  # the first event of an `every (...) within` group
                p[g] = ts
            self._complete(i, node, p, ts)
        if self.s.sequence:
            return []
        if not live:
            return items
        # a completed partial has this node's slot filled; waiting ones (and expired hits,
        # which the expiry drops later) do not
        return [p for p in items if p[slot] is None]

    def _complete(self, i, node, p, ts):
        if node.kind == LOGICAL:
            other = self.s.nodes[node.partner]
            if other.kind == ABSENT and other.for_millis is not None:
                if node.op == "or":
                    self._discard_side(node.partner, p)
                elif p[other.slot] is WAIT:
                    return  # `not A for T and B`: the deadline completes the pair
            elif other.kind == ABSENT:
                self._discard(node.partner, p)  # `not A and B`: B came first
            elif node.op == "and" and p[other.slot] is None:
                return
            elif node.op == "or":
                self._discard(node.partner, p)
        p[-1] = ts  # the partial's last event (a half-done `and` does not move it: Siddhi 3.2)
        if node.next:
            for j in node.next:
                self._add(j, p)
        else:
            self.emitted = True
            self.out.append((ts, self.s.make_row(p), CURRENT))
        if node.every_to and i not in self.s.no_restart:
            q = self.s.every_copy(p, node)
            targets = node.every_to
            if (
                node.op == "or"
                and i in targets
                and node.partner in targets
                and not self.s.sequence
                and i not in self.s.starts
            ):
                # `A -> every (B or C)` re-arms only the side that matched (Siddhi 3.2); at
                # the start, `every (A or B) -> C` re-arms both
                targets = (i,)
            for j in targets:
                self.new[j].append(q)
                self.touched.add(j)

    def _add(self, j, p):
        """Hand partial p on to a later node j.

        Patterns file it straight into j's pending partials: nodes run last-first, so j has
        already seen this event (or does not read its stream). Sequences queue it in `new`
        (first one wins) until the event is done."""
        node = self.s.nodes[j]
        if node.kind == ABSENT and node.for_millis is not None:
            self._add_absent(j, node, p)
            return
        if node.kind == COUNT and node.min_count == 0 and p[node.slot] is None:
            if not node.next and self.now is not None and j <= 1:
                # a trailing `B?` / `B*` / `B<0:n>` right after the first state completes at
                # once with a null (Siddhi 3.2); after two or more states it waits for its
                # first row (kinds.CountSteps)
                self._complete(j, node, p, self.now)
                return
            self._queue(j, node, p)
            for k in node.next:
                self._add(k, p)
            return
        self._queue(j, node, p)

    def _queue(self, j, node, p):
        if self.s.sequence:
            new = self.new[j]
            if new:
                return
            new.append(p)
            self.touched.add(j)
        elif j in self.s.renew_targets:
            # an `every` restart may copy a partial back into j during this event: the copy
            # keeps the older partial's place, ahead of partials handed on by this event
            self.new[j].append(p)
            self.touched.add(j)
        else:
            self._file(j, node, p)

    def _file(self, j, node, p):
        pend = self.pending[j]
        if node.partial_key is None:
            pend.append(p)
            return
        key = node.partial_key(p)
        if key is None:
            return  # null never equals anything: this partial can never go on
        if node.within is not None and p[-1] is None:
            p[-1] = -1  # no event yet: Siddhi's unset timestamp, so `within` can expire it
        if node.range is not None:
            if not self._file_ranged(j, node, p, key):
                return
        else:
            bucket = pend.get(key)
            if bucket is None:
                pend[key] = [p]
            else:
                bucket.append(p)
        if node.within is not None:
            self.expiry.append((p[-1], j, key, p))

    def _expire(self, limit):
        """Drop filed partials that started before `limit` (oldest first, O(1) each)."""
        dq, nodes, pending = self.expiry, self.s.nodes, self.pending
        while dq and dq[0][0] is not None and dq[0][0] < limit:
            _, j, key, p = dq.popleft()
            if p[nodes[j].slot] is not None and nodes[j].kind != COUNT:
                continue  # it went on from there already
            if p[-1] >= limit:
                # its last event is newer than its filing: a count state still collecting,
                # here or (the same partial, as Siddhi shares it) at an earlier `<0:n>` state
                dq.append((p[-1], j, key, p))
                continue
            bucket = pending[j].get(key)
            if bucket is None:
                continue
            if nodes[j].range is not None:
                self._unfile_ranged(nodes[j], bucket, p)
                if not bucket.ents:
                    del pending[j][key]
                continue
            if bucket[0] is p:
                del bucket[0]
            else:
                bucket[:] = [q for q in bucket if q is not p]
            if not bucket:
                del pending[j][key]

    def step_fresh_start(self, i, ts, r):
        """A start state under its own `every` in a pattern: it always waits with one blank
        partial, so a fitting event simply starts a new partial match."""
        node = self.s.nodes[i]
        if node.cond is not None and not node.cond(self.s.blank, r):
            return
        p = [None] * self.s.width
        p[node.slot] = r
        p[-1] = ts
        j = self.s.keyed_next[i]
        if j is not None and j in self.s.renew_targets:
            self._add(j, p)
        elif j is not None and self.s.nodes[j].range is not None:
            self._file(j, self.s.nodes[j], p)
        elif j is not None:  # inline _add/_file into one indexed state
            key = self.s.nodes[j].partial_key(p)
            if key is None:
                return
            pend = self.pending[j]
            bucket = pend.get(key)
            if bucket is None:
                pend[key] = [p]
            else:
                bucket.append(p)
            if self.s.nodes[j].within is not None:
                self.expiry.append((ts, j, key, p))
        elif node.next:
            for j in node.next:
                self._add(j, p)
        else:
            self.emitted = True
            self.out.append((ts, self.s.make_row(p), CURRENT))

    def _discard(self, j, p):
        """Remove partial p (by identity) from node j's lists."""
        self.new[j] = [q for q in self.new[j] if q is not p]
        pend = self.pending[j]
        if isinstance(pend, dict):
            for key, bucket in list(pend.items()):
                rest = [q for q in bucket if q is not p]
                if len(rest) != len(bucket):
                    if rest:
                        pend[key] = rest
                    else:
                        del pend[key]
        else:
            self.pending[j] = [q for q in pend if q is not p]

    # -- between events -------------------------------------------------------------------
    def _update(self):
        new = self.new
        touched = self.touched
        if not touched:
            return
        for i in sorted(touched) if len(touched) > 1 else touched:
            items = new[i]
            if not items:
                continue
            pend = self.pending[i]
            if isinstance(pend, dict):
                node = self.s.nodes[i]
                for p in items:
                    self._file(i, node, p)
            elif i in self.s.absent_timed:  # an `every` restart of an absence
                for p in items:
                    self._add_absent(i, self.s.nodes[i], p)
            else:
                pend.extend(items)
            new[i] = []
        touched.clear()

    def _reset(self):
        """Sequences: whatever did not move on with this event is dropped, and the start
        state re-arms, with or without `every` (Siddhi 3.2: a sequence without `every` keeps
        matching after a match and after a broken partial match)."""
        s = self.s
        for i in range(len(self.pending)):
            self.pending[i] = []
        if any(self.new[i] for i in s.starts):
            return
        p = [None] * s.width
        for i in s.starts:
            self.new[i].append(p)
            self.touched.add(i)

    def _sweep(self, now):
        """Drop every partial whose first event is more than `within` before now."""
        limit = now - self.s.within
        self.last_sweep = now
        for i in self.s.within_slots:
            pend = self.pending[i]
            if pend and not isinstance(pend, dict):  # indexed: through self.expiry
                self.pending[i] = [p for p in pend if last_time(p) >= limit]
