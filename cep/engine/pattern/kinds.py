"""Counting states, a mixin of StateMachine (nfa.py): `<n:m>`, `+`, `*`, `?`
(non-occurrence is in cep.engine.pattern.absent).

Count states collect rows into the partial's slot (a list); a partial is handed on once the
minimum is reached (patterns: once, the same partial keeps collecting; sequences: after every
row) and leaves the count state at the maximum. A state after a count state that has taken a
partial makes the count state drop it."""



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
