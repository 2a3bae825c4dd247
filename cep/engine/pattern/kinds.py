"""Counting states, a mixin of StateMachine (nfa.py): `<n:m>`, `+`, `*`, `?`
(non-occurrence is in cep.engine.pattern.absent).

Count states collect rows into the partial's slot (a list); a partial is handed on once the
minimum is reached (patterns: once, the same partial keeps collecting; sequences: after every
row) and leaves the count state at the maximum. A state after a count state that has taken a
partial makes the count state drop it."""


def last_time(p):
    """Time of the partial's last event; -1 (Siddhi's unset timestamp) before its first."""
    t = p[-1]
    return -1 if t is None else t


class Collected(list):
    """The rows a count state collected for `every A<n:m>` in a pattern: the `every` restart
    shares this list with the partial it was copied from (its owner), as Siddhi 3.2's shallow
    copy does, so As after the count was reached still extend the owner's match."""

    __slots__ = ("owner",)


class CountSteps:
    def step_count(self, i, ts, r):
        node = self.s.nodes[i]
        pend = self.pending[i]
        if node.row_key is None:
            if pend:
                self.pending[i] = self._count_items(i, node, pend, ts, r)
            return
        # indexed (patterns): the partials filed under the event's key are the only ones
        # its `own == earlier` conjunct lets through; the others wait untouched
        key = node.row_key(r)
        bucket = pend.get(key) if key is not None else None
        if not bucket:
            return
        keep = self._count_items(i, node, bucket, ts, r)
        if keep:
            pend[key] = keep
        else:
            del pend[key]

    def _count_items(self, i, node, items, ts, r):
        """Offer r to count node i's waiting partials `items` (in order); those still
        waiting."""
        keep = []
        within, seq = node.within, self.s.sequence
        slot, cond, succ = node.slot, node.cond, self.s.succ_slots[i]
        last = not node.next and not seq
        for p in items:
            if within is not None and ts - last_time(p) > within:
                continue
            if any(p[s] is not None for s in succ):
                continue  # a later state already took this partial
            lst = p[slot]
            if lst is not None and not seq:
                if last and len(lst) >= node.min_count:
                    continue  # emitted already (a second filing of the same partial)
                owner = getattr(lst, "owner", p)
                if owner is not p and self._owner_done(owner, ts):
                    continue  # a shared `every` copy whose owner can no longer change
            if self._count_one(i, node, p, ts, r, slot, cond):
                continue
            if not seq:
                keep.append(p)
        return keep

    def _owner_done(self, owner, ts):
        """True when the partial an `every` copy shares its list with has completed or can
        no longer complete (its `within` passed at the last state)."""
        s = self.s
        if any(owner[x] is not None for x in s.exit_slots):
            return True
        if s.within is None or ts - last_time(owner) <= s.within:
            return False
        return any(all(owner[x] is not None for x in s.nodes[w].filled) for w in s.within_slots)

    def _count_one(self, i, node, p, ts, r, slot, cond):
        """Offer r to count node i; True when p leaves this node's pending list.

        Siddhi 3.2: a pattern hands the partial on (or emits it, as the last state) when the
        count reaches its minimum, once, and drops it at exactly the maximum; a sequence hands
        it on after every row from the minimum and never emits from a count state (with
        `@Plan:siddhi('fixed')` a final count state emits once, at its minimum)."""
        lst = p[slot]
        if lst is None:
            lst = p[slot] = Collected() if slot in self.s.shared_every else []
            if slot in self.s.shared_every:
                lst.owner = p
        lst.append(r)
        if cond is not None and not cond(p, r):
            lst.pop()
            if not lst:
                p[slot] = None
            return self.s.sequence
        n = len(lst)
        if n > node.min_count and not self.s.sequence and self.s.later_within[i]:
            self._drop_expired_later(i, p, ts)
        p[-1] = ts
        # a trailing zero-minimum count after two or more states emits at its first row
        first_of_zero = n == 1 and node.min_count == 0 and not node.next and i > 1
        if self.s.sequence:
            if n >= node.min_count and node.next:
                self._complete(i, node, p, ts)
            elif first_of_zero:
                self._complete(i, node, p, ts)
            elif n == node.min_count and self.s.fixed:  # fixed: a final count emits once
                self._complete(i, node, p, ts)
            if node.max_count is not None and n >= node.max_count:
                return True
            self._add(i, p)
            return True
        if n == node.min_count or first_of_zero:
            self._complete(i, node, p, ts)
            if not node.next:
                return True
        return n == node.max_count

    def _drop_expired_later(self, i, p, ts):
        """Before a count state moves the time of partial p that it has already handed on
        (Siddhi 3.2 hands on the same state event and keeps collecting into it): drop p from
        the later `within` states where Siddhi has already expired it. A plain state checks
        `within` against the partial's time for every waiting partial at each event of its
        stream (StreamPreStateProcessor.isExpired), matching or not, so a partial that an
        event found expired there is gone for good, even if a later count row would have
        made it young again."""
        old = last_time(p)
        seen, stream = self.seen, self.stream
        for j in self.s.later_within[i]:
            node = self.s.nodes[j]
            if p[node.slot] is not None:
                continue
            last = seen.get(node.stream_id)
            if node.stream_id == stream:
                last = ts  # later nodes see the event first
            if last is not None and last - old > node.within:
                self._unfile(j, node, p)

    def _unfile(self, j, node, p):
        """Remove partial p (by identity) from node j's new and waiting partials."""
        pend = self.pending[j]
        if not isinstance(pend, dict):
            self._discard(j, p)
            return
        self.new[j] = [q for q in self.new[j] if q is not p]
        key = node.partial_key(p)
        bucket = pend.get(key) if key is not None else None
        if bucket is None:
            return
        if node.range:
            self._unfile_ranged(node, bucket, p)
            if not bucket.ents:
                del pend[key]
            return
        rest = [q for q in bucket if q is not p]
        if rest:
            pend[key] = rest
        else:
            del pend[key]
