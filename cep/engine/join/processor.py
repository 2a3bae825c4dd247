"""The join processor: each arrival goes into its side's window and probes the other side.

Joined rows are composites `(left_row, right_row)`; an outer join pads the missing side with
None. A side triggers output unless the join is `unidirectional` on the other side; a table side
never triggers and never stores (the table does). Expired rows a window emits probe too and give
EXPIRED join rows, before the arrival's CURRENT rows. A self-join feeds each event to the left
side (probing the right) and then to the right side (probing the left), so an event pairs with
itself exactly once.

`on(a, b)` is the compiled condition over a left row `a` and a right row `b`; `probe_key` gives,
per side, the key function of the *arriving* row when the other side is indexed on it.
"""
from cep.engine.join.sides import Side
from cep.engine.processor import Processor

LEFT, RIGHT = 0, 1


class TableSide:
    """A table as a join side: probes look rows up in the table; it never triggers."""
    triggers_timer = False

    def __init__(self, table, use_key):
        self.table = table
        self.use_key = use_key

    def candidates(self, key_value=None, use_key=False):
        return self.table.candidates(key_value, use_key and self.use_key)

    def fresh(self):
        return self

    def get_state(self):
        return None  # the table snapshots itself

    def set_state(self, state):
        pass


class JoinProcessor(Processor):
    stateful = True

    def __init__(self, sides, on, probe_keys, triggers, outer, chunked=False,
                 want_expired=True, lookups=None):
        super().__init__()
        self.lookups = lookups  # generated whole-batch table lookups per side (or None)
        self.want_expired = want_expired  # False: expired rows need no probe (never output)
        self.sides = sides  # [left, right]
        self.on = on
        self.probe_keys = probe_keys  # [key of a left row into right's index, right -> left]
        self.triggers = triggers  # [left triggers, right triggers]
        self.outer = outer  # [pad unmatched left arrivals, pad unmatched right arrivals]
        self.chunked = chunked  # one downstream call per arrival (group-by over joins)
        self.scheduler = None  # set by the builder when a side expires by time
        self.armed = None
        self.lookup = [(lookups[w] if lookups and lookups[w] else self._keyed_lookup(w))
                       for w in (LEFT, RIGHT)]
        self.selected = [getattr(f, "selected", False) for f in self.lookup]

    def clone(self):
        p = JoinProcessor([s.fresh() for s in self.sides], self.on, self.probe_keys,
                          self.triggers, self.outer, self.chunked, self.want_expired,
                          self.lookups)
        p.scheduler = self.scheduler
        return p

    def get_state(self):
        return [s.get_state() for s in self.sides]

    def set_state(self, state):
        for s, st in zip(self.sides, state):
            s.set_state(st)
        self.armed = None
        self.arm()  # a restored scheduler has no timers

    # -- input ----------------------------------------------------------------------------
    def process_side(self, which, batch):
        """Events arriving on side `which` (LEFT or RIGHT)."""
        side = self.sides[which]
        if self.lookup[which] is not None:
            out = self.lookup[which](batch)
            if out:  # a lookup fused with the select gives output rows: past the selector
                (self.next.next if self.selected[which] else self.next).process(out)
            return
        out = []
        for ts, row, kind in batch:
            emitted = side.arrive(ts, row)
            if emitted and self.triggers[which]:
                self._probe(which, emitted, out)
            if self.chunked and out:
                self.emit(out)
                out = []
        self.emit(out)
        self.arm()

    def process_self(self, batch):
        """A self-join: each event goes left first, then right."""
        for ev in batch:
            self.process_side(LEFT, (ev,))
            self.process_side(RIGHT, (ev,))

    def on_time(self, now):
        """Timer path: windows that expire rows by time."""
        out = []
        for which, side in enumerate(self.sides):
            emitted = side.expire(now) if side.triggers_timer else ()
            if emitted and self.triggers[which]:
                self._probe(which, emitted, out)
        self.emit(out)

    def arm(self):
        """Make sure a timer is set for the earliest time-based expiry."""
        if self.scheduler is None:
            return
        due = self.next_due()
        if due is not None and (self.armed is None or due < self.armed):
            self.armed = due
            self.scheduler.notify_at(due, self._fire)

    def _fire(self, now):
        if self.armed is not None and self.armed <= now:
            self.armed = None
        self.on_time(now)
        self.arm()

    def next_due(self):
        dues = [s.next_due() for s in self.sides if s.triggers_timer]
        dues = [d for d in dues if d is not None]
        return min(dues) if dues else None

    def _keyed_lookup(self, which):
        """A whole-batch probe for a windowless stream side against a table's unique key
        (one dict lookup per event, no per-event window work), or None."""
        side, other = self.sides[which], self.sides[1 - which]
        key = self.probe_keys[which]
        if (type(side) is not Side or not isinstance(other, TableSide) or key is None
                or not other.use_key or not other.table.indexed or self.chunked
                or not self.triggers[which]):
            return None
        table, on, pad = other.table, self.on, self.outer[which]
        left = which == LEFT

        def lookup(batch):
            get = table.rows.get
            hits = [(ts, r, k, get(key(r))) for ts, r, k in batch]
            if on is not None:
                hits = [(ts, r, k, t if t is not None and (on(r, t) if left else on(t, r))
                         else None) for ts, r, k, t in hits]
            if not pad:
                hits = [h for h in hits if h[3] is not None]
            if left:
                return [(ts, (r, t), k) for ts, r, k, t in hits]
            return [(ts, (t, r), k) for ts, r, k, t in hits]
        return lookup

    # -- probing --------------------------------------------------------------------------
    def _probe(self, which, emitted, out):
        other = self.sides[1 - which]
        key = self.probe_keys[which]
        on = self.on
        pad = self.outer[which]
        skip_expired = not self.want_expired
        for ts, row, kind in emitted:
            if kind and skip_expired:
                continue
            cands = other.candidates(key(row), True) if key is not None else other.candidates()
            n = len(out)
            if which == LEFT:
                if on is None:
                    out.extend([(ts, (row, b), kind) for b in cands])
                else:
                    out.extend([(ts, (row, b), kind) for b in cands if on(row, b)])
                if pad and len(out) == n:
                    out.append((ts, (row, None), kind))
            else:
                if on is None:
                    out.extend([(ts, (a, row), kind) for a in cands])
                else:
                    out.extend([(ts, (a, row), kind) for a in cands if on(a, row)])
                if pad and len(out) == n:
                    out.append((ts, (None, row), kind))
