"""`every (...) within T` on a group (Siddhi 4 scoping): the group's events must lie within T
of the group's first event, wherever the group sits in the pattern.

A partial keeps the time of its group's first event in an extra slot (`GroupScope.time_slot`).
Before each event, partials waiting inside a group whose first event is more than T older are
dropped, and (as Siddhi's `withinEveryPreStateProcessor`) the group restarts: a copy with the
group's slots cleared goes back to the group's first state(s). `within` is inclusive, as for the
whole pattern."""


class ScopedSteps:
    """Mixin of StateMachine: expiry of partials inside `every (...) within` groups."""

    def _expire_groups(self, ts):
        nodes, pending = self.s.nodes, self.pending
        restarted = set()
        for i in self.s.scoped:
            scope = nodes[i].scope
            g, limit = scope.time_slot, ts - scope.millis
            pend = pending[i]
            if isinstance(pend, dict):
                for key in list(pend):
                    keep = self._drop_late(pend[key], g, limit, scope, restarted)
                    if keep:
                        pend[key] = keep
                    else:
                        del pend[key]
            elif pend:
                pending[i] = self._drop_late(pend, g, limit, scope, restarted)
        if restarted:
            self._update()

    def _drop_late(self, items, g, limit, scope, restarted):
        keep = []
        for p in items:
            if p[g] is None or p[g] >= limit:
                keep.append(p)
            elif id(p) not in restarted:
                restarted.add(id(p))
                self._restart_group(p, scope)
        return keep

    def _restart_group(self, p, scope):
        q = list(p)
        for s in scope.slots:
            q[s] = None
        for s in self.s.count_slots:
            if q[s] is not None:
                q[s] = list(q[s])
        if all(x is None for x in q[:-1]):
            q[-1] = None
        for j in scope.entries:
            self.new[j].append(q)
            self.touched.add(j)
