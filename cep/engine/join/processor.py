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

from collections import deque

from cep.engine.join.sides import CURRENT, EXPIRED, RESET, SideSink, StreamSide, take_row
from cep.engine.processor import Processor

LEFT, RIGHT = 0, 1


class TableSide:
    """A table as a join side: probes look rows up in the table; it never triggers."""

    window = None

    def __init__(self, table, use_key, probe=None):
        self.table = table
        self.use_key = use_key
        self.probe = probe  # a backend's own probe: the key value is its values

    def candidates(self, key_value=None, use_key=False):
        if self.probe is not None:
            return self.table.find(self.probe, key_value)
        return self.table.candidates(key_value, use_key and self.use_key)

    def fresh(self):
        return self

    def get_state(self):
        return None  # the table snapshots itself

    def set_state(self, state):
        pass


class JoinProcessor(Processor):
    stateful = True

    def __init__(
        self, sides, on, probe_keys, triggers, outer, chunked=False, want_expired=True, lookups=None
    ):
        super().__init__()
        self.lookups = lookups  # generated whole-batch table lookups per side (or None)
        self.want_expired = want_expired  # False: expired rows need no probe (never output)
        self.sides = sides  # [left, right]: StreamSide or TableSide
        self.on = on
        self.probe_keys = probe_keys  # [key of a left row into right's index, right -> left]
        self.triggers = triggers  # [left triggers, right triggers]
        self.outer = outer  # [pad unmatched left arrivals, pad unmatched right arrivals]
        self.chunked = chunked  # one selector call per probing row (aggregates over joins)
        for which, side in enumerate(sides):
            if isinstance(side, StreamSide):
                side.attach(SideSink(self, which))
        self.lookup = [
            (lookups[w] if lookups and lookups[w] else self._keyed_lookup(w)) for w in (LEFT, RIGHT)
        ]
        self.selected = [getattr(f, "selected", False) for f in self.lookup]

    def clone(self):
        return JoinProcessor(
            [s.fresh() for s in self.sides],
            self.on,
            self.probe_keys,
            self.triggers,
            self.outer,
            self.chunked,
            self.want_expired,
            self.lookups,
        )

    def get_state(self):
        return [s.get_state() for s in self.sides]

    def set_state(self, state):
        for s, st in zip(self.sides, state):
            s.set_state(st)

    # -- input ----------------------------------------------------------------------------
    def process_side(self, which, batch):
        """Events arriving on side `which` (LEFT or RIGHT): through its window (whose output
        comes back to `window_output`, now or later on a timer)."""
        if self.lookup[which] is not None:
            out = self.lookup[which](batch)
            if out:  # a lookup fused with the select gives output rows: past the selector
                (self.next.next if self.selected[which] else self.next).process(out)
            return
        side = self.sides[which]
        if side.window is not None:
            side.window.process(batch)
        elif getattr(side, "named", False):  # a named window's emissions, kinds kept
            self.window_output(which, batch)
        else:
            expire = self.want_expired and self.triggers[which]
            self.window_output(which, side.passing(batch, expire))

    def process_self(self, batch):
        """A self-join: each event goes left first, then right."""
        for ev in batch:
            self.process_side(LEFT, (ev,))
            self.process_side(RIGHT, (ev,))

    def window_output(self, which, chunk):
        """What side `which`'s window emits: keep its contents in step, and probe the other
        side with each row. With aggregates the selector gets one call per probing row (as
        Siddhi 3.2: each row of a flush or an expiry chunk gives its own output row), and an
        outer side's RESET (a batch window's new batch) resets the aggregates."""
        side = self.sides[which]
        contents = side.contents if side.window is not None else None
        trigger, chunked = self.triggers[which], self.chunked
        if not chunked and trigger and self._plain_other(which):
            self._window_output_plain(which, contents, chunk)
            return
        skip_expired = not self.want_expired
        out = []
        for ev in chunk:
            kind = ev[2]
            if contents is not None:
                if kind == CURRENT:
                    contents.add(ev[1])
                elif kind == EXPIRED:
                    contents.remove(ev[1])
                else:
                    contents.clear()  # a batch window releases a new batch
            if not trigger or (kind == EXPIRED and skip_expired):
                continue
            if kind == RESET:
                if chunked and self.outer[which]:
                    self.emit([(ev[0], None, RESET)])
                continue
            self._probe(which, ev, out)
            if chunked and out:
                self.emit(out)
                out = []
        self.emit(out)

    def _plain_other(self, which):
        """True when the other side is a stream side whose rows a probe reads as they are
        (its Contents: no sort order, no probe hook, not a named window)."""
        other = self.sides[1 - which]
        return (
            type(other) is StreamSide
            and getattr(other.window, "join_rows", None) is None
            and getattr(other.window, "probed", None) is None
        )

    def _window_output_plain(self, which, contents, chunk):
        """window_output for a triggering side without aggregates whose other side is plain:
        the same steps, with the contents' and the probe's methods bound once per chunk."""
        other = self.sides[1 - which].contents
        key, on, pad = self.probe_keys[which], self.on, self.outer[which]
        skip_expired = not self.want_expired
        left = which == LEFT
        if contents is not None:
            add, remove, clear = contents.add, contents.remove, contents.clear
            cidx, ckey = contents.index, contents.key  # a keyed side: add and remove inline
            if cidx is not None:
                cget = cidx.get
        else:
            cidx = None
        if key is not None and other.index is not None:
            index = other.index
            cands_of = lambda row: index.get(key(row), ())  # noqa: E731
        else:
            if key is not None:
                cands_of = lambda row: other.candidates(key(row), True)  # noqa: E731
            else:
                cands_of = lambda row: other.candidates()  # noqa: E731
        out = []
        append, extend = out.append, out.extend
        for ts, row, kind in chunk:
            if cidx is not None:
                if kind == CURRENT:
                    k = ckey(row)
                    bucket = cget(k)
                    if bucket is None:
                        cidx[k] = deque((row,))
                    else:
                        bucket.append(row)
                elif kind == EXPIRED:
                    k = ckey(row)
                    bucket = cget(k)
                    if bucket is not None:
                        take_row(bucket, row)
                        if not bucket:
                            del cidx[k]
                else:
                    clear()
            elif contents is not None:
                if kind == CURRENT:
                    add(row)
                elif kind == EXPIRED:
                    remove(row)
                else:
                    clear()
            if kind == RESET or (kind == EXPIRED and skip_expired):
                continue
            cands = cands_of(row)
            n = len(out)
            if left:
                if on is None:
                    extend([(ts, (row, b), kind) for b in cands])
                else:
                    extend([(ts, (row, b), kind) for b in cands if on(row, b)])
                if pad and len(out) == n:
                    append((ts, (row, None), kind))
            else:
                if on is None:
                    extend([(ts, (a, row), kind) for a in cands])
                else:
                    extend([(ts, (a, row), kind) for a in cands if on(a, row)])
                if pad and len(out) == n:
                    append((ts, (None, row), kind))
        self.emit(out)

    def _keyed_lookup(self, which):
        """A whole-batch probe for a windowless stream side against a table's unique key
        (one dict lookup per event, no per-event window work), or None."""
        side, other = self.sides[which], self.sides[1 - which]
        key = self.probe_keys[which]
        if (
            not isinstance(side, StreamSide)
            or side.window is not None
            or getattr(side, "named", False)
            or not isinstance(other, TableSide)
            or key is None
            or not other.use_key
            or not other.table.indexed
            or self.chunked
            or self.want_expired
            or not self.triggers[which]
        ):
            return None
        table, on, pad = other.table, self.on, self.outer[which]
        left = which == LEFT

        def lookup(batch):
            get = table.rows.get
            hits = [(ts, r, k, get(key(r))) for ts, r, k in batch]
            if on is not None:
                hits = [
                    (ts, r, k, t if t is not None and (on(r, t) if left else on(t, r)) else None)
                    for ts, r, k, t in hits
                ]
            if not pad:
                hits = [h for h in hits if h[3] is not None]
            if left:
                return [(ts, (r, t), k) for ts, r, k, t in hits]
            return [(ts, (t, r), k) for ts, r, k, t in hits]

        return lookup

    # -- probing --------------------------------------------------------------------------
    def _probe(self, which, ev, out):
        """The join rows of one row `ev` of side `which` against the other side."""
        ts, row, kind = ev
        other = self.sides[1 - which]
        key = self.probe_keys[which]
        on = self.on
        cands = other.candidates(key(row), True) if key is not None else other.candidates()
        probed = getattr(other.window, "probed", None)
        if probed is not None:  # windows whose state a probe disturbs in Siddhi 3.2
            probed()
        n = len(out)
        if which == LEFT:
            if on is None:
                out.extend([(ts, (row, b), kind) for b in cands])
            else:
                out.extend([(ts, (row, b), kind) for b in cands if on(row, b)])
            if self.outer[which] and len(out) == n:
                out.append((ts, (row, None), kind))
        else:
            if on is None:
                out.extend([(ts, (a, row), kind) for a in cands])
            else:
                out.extend([(ts, (a, row), kind) for a in cands if on(a, row)])
            if self.outer[which] and len(out) == n:
                out.append((ts, (None, row), kind))
