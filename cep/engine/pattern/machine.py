"""The compiled, shareable part of a pattern/sequence query: nodes, links and helpers.

`compile_machine(state_input, conditions)` flattens the model and attaches each node's compiled
condition; `StateMachine(shared)` (cep.engine.pattern.nfa) holds the per-key partial matches.
"""

from cep.engine.pattern.gate import build_gates
from cep.engine.pattern.linear import build_linear
from cep.engine.pattern.nfa import StateMachine
from cep.errors import InvalidQueryError
from cep.engine.pattern.plan import (
    ABSENT,
    COUNT,
    LOGICAL,
    STREAM,
    final_filled,
    flatten,
    group_scopes,
    successor_slots,
    within_slots,
)


class SharedMachine:
    """Everything about a pattern that does not change while it runs."""

    def __init__(self, nodes, starts, sequence, within, fixed=False):
        self.nodes = nodes
        # `@Plan:siddhi('fixed')`: the 3.2 bugs below behave as users expect (engine README)
        self.fixed = fixed
        self.starts = starts
        self.sequence = sequence
        self.within = within
        self.n_slots = len(nodes)
        # `every A<n:m>` in a pattern: the restart shares the collected list (Siddhi 3.2's
        # shallow copy), so later As extend the match already handed on
        # (fixed: the restart collects its own As, so `every A<n:m> -> B` matches again)
        # The same holds for a count state ending a larger group, `every (A -> B<1:2>) -> C`:
        # the restart keeps B's list, so it starts past the minimum and never hands on again
        self.shared_every = {
            n.slot for n in nodes if not sequence and n.kind == COUNT and n.every_to and not fixed
        }
        # a group with a count state before its last state, `every (A -> B<2> -> D) -> C`:
        # Siddhi 3.2's restart copy keeps D's event, and B drops a partial whose next state
        # is filled, so the group never restarts (fixed: it restarts as usual)
        self.no_restart = {
            n.slot
            for n in nodes
            if not sequence
            and n.every_to
            and not fixed
            and any(nodes[x].kind == COUNT for x in n.every_slots if x != n.slot)
        }
        self.scopes = group_scopes(nodes)
        self.width = self.n_slots + len(self.scopes) + 1  # slots, group start times, start
        self.succ_slots = [successor_slots(nodes, n) for n in nodes]
        self.count_slots = tuple(n.slot for n in nodes if n.kind == COUNT)
        self.start_every = any(s in n.every_to for n in nodes for s in starts)
        # nodes whose `every` group holds every slot filled so far: the restart is a fresh partial
        self.fresh_every = {
            n.slot
            for n in nodes
            if n.every_to
            and n.slot not in self.shared_every
            and set(range(max(n.every_slots) + 1)) <= set(n.every_slots)
        }
        # a pattern starting with a present `and`/`or` starts with two fresh partials: Siddhi
        # 3.2 initialises both sides and each adds one to the pair (so each match comes twice;
        # fixed: once)
        first = nodes[starts[0]]
        self.start_copies = (
            2
            if (
                not sequence
                and not fixed
                and first.kind == LOGICAL
                and nodes[first.partner].kind == LOGICAL
            )
            else 1
        )
        self._place_scopes()
        self.scoped = tuple(n.slot for n in nodes if n.scope is not None)
        self.blank = [None] * self.width  # never mutated
        self.within_slots = tuple(
            n.slot for n in nodes if n.within is not None and n.kind != ABSENT
        )
        self.exit_slots = tuple(n.slot for n in nodes if not n.next)
        # per count node: the later plain states that check `within` (kinds.CountSteps)
        self.later_within = [
            tuple(
                m.slot
                for m in nodes
                if m.slot > n.slot and m.within is not None and m.kind != ABSENT and m.kind != COUNT
            )
            if n.kind == COUNT
            else ()
            for n in nodes
        ]
        self.absent_timed = tuple(n.slot for n in nodes if n.kind == ABSENT and n.for_millis)
        self.scheduler = None  # set by the builder when absent states need timers
        self.scheduler_rank = ()  # and the rank of those timers (cep.engine.clock)
        if not self.count_slots:
            width = self.n_slots
            self.make_row = lambda p: tuple(p[:width])
        self.refresh()
        self.simple_starts = not sequence and all(nodes[i].kind == STREAM for i in starts)
        by_stream = {}
        for n in reversed(nodes):
            by_stream.setdefault(n.stream_id, []).append(n.slot)
        for order in by_stream.values():
            # one event fitting both sides of an `or` binds to the left side (Siddhi 3.2):
            # the left node sees it before its partner, completes and discards the pair
            for k in range(len(order) - 1):
                a = nodes[order[k]]
                if a.op == "or" and a.partner == order[k + 1] and order[k + 1] < order[k]:
                    order[k], order[k + 1] = order[k + 1], order[k]
        self.order_by_stream = by_stream
        # nodes an `every` restart copies partials back into (nfa.StateMachine._queue)
        self.renew_targets = frozenset(
            t for n in nodes for t in (n.every_to or ()) if t not in starts
        )
        self.streams = tuple(dict.fromkeys(n.stream_id for n in nodes))
        # a sequence of plain states over one stream: one generated loop (pattern/linear.py)
        self.linear_run = build_linear(self)
        # per stream, the events some state may take (pattern/gate.py)
        self.gates = build_gates(self)

    def _place_scopes(self):
        """Give each `every (...) within` group its start-time slot, which the group's
        `every` restart clears with the group's own slots."""
        for k, scope in enumerate(self.scopes):
            scope.time_slot = self.n_slots + k
            scope.slots = scope.slots + (scope.time_slot,)
        for n in self.nodes:
            if n.scope is not None and n.every_to:
                n.every_slots = n.every_slots + (n.scope.time_slot,)

    def refresh(self):
        """Recompute what depends on the nodes' index keys (after they change)."""
        self.indexed = tuple(n.row_key is not None for n in self.nodes)
        if hasattr(self, "linear_run"):  # index keys changed after construction
            self.linear_run = build_linear(self)
        self.steps = [self._step_for(n) for n in self.nodes]
        # a fresh start handing on to exactly one indexed plain state: filed inline
        self.keyed_next = [
            n.next[0]
            if (
                len(n.next) == 1
                and not self.sequence
                and self.nodes[n.next[0]].kind == STREAM
                and self.nodes[n.next[0]].row_key is not None
            )
            else None
            for n in self.nodes
        ]

    def _step_for(self, n):
        if n.kind == COUNT:
            return StateMachine.step_count
        if n.kind == ABSENT:
            return StateMachine.step_absent
        if n.scope is not None:
            return StateMachine.step_stream
        if (
            not self.sequence
            and n.kind == STREAM
            and n.slot in self.starts
            and n.every_to == [n.slot]
            and n.slot in self.fresh_every
        ):
            return StateMachine.step_fresh_start
        if not self.sequence and n.kind == STREAM and n.row_key is not None:
            return StateMachine.step_ranged if n.range else StateMachine.step_keyed
        return StateMachine.step_stream

    def make_row(self, p):
        """The composite row of a match: one slot per state, count slots as tuples."""
        row = p[: self.n_slots]
        for s in self.count_slots:
            if row[s] is not None:
                row[s] = tuple(row[s])
        return tuple(row)

    def every_copy(self, p, node):
        """A copy of p with the `every` group's slots cleared, to restart the group."""
        if node.slot in self.fresh_every:
            return [None] * self.width
        if node.slot in self.shared_every:
            q = list(p)  # the count's list is shared with p (see shared_every)
            for x in node.every_slots:
                if x != node.slot:
                    q[x] = None  # filled again before anything reads them
            return q
        slots = node.every_slots
        q = list(p)
        for s in slots:
            q[s] = None
        for s in self.count_slots:
            if q[s] is not None:
                q[s] = list(q[s])
        if all(x is None for x in q[:-1]):
            q[-1] = None
        return q

    def machine(self):
        return StateMachine(self)


def compile_machine(state_input, conditions=None, within=None, fixed=False):
    """Flatten `state_input` (a model StateInputStream) into a SharedMachine.

    `conditions(node, nodes)` returns `(cond, row_key, partial_key)` for a node (all may be
    None); without it nodes have no conditions (tests pass their own)."""
    nodes, starts = flatten(state_input.state)
    sequence = state_input.kind == "sequence"
    if within is None:
        within = state_input.within_millis
    if within is not None:
        # Siddhi 3.2's counting states never look at `within` (CountPreStateProcessor has
        # no expiry check, unlike StreamPreStateProcessor), so a trailing `A -> B<2:3>
        # within T` collects its Bs whatever the gaps (fixed: the gap to the partial's last
        # event is bounded, as for a plain state)
        bounded = [
            slot for slot in within_slots(state_input.state) if fixed or nodes[slot].kind != COUNT
        ]
        for slot in bounded:
            nodes[slot].within = within
        within = within if bounded else None
    for n in nodes:
        if sequence and n.kind == ABSENT:
            raise InvalidQueryError(
                "`not ...` states are supported in patterns (`->`), not in sequences", n.state.span
            )
    if conditions is not None:
        for node in nodes:
            cond, row_key, partial_key = conditions(node, nodes)
            node.cond = cond
            if row_key is not None and not sequence and node.kind in (STREAM, COUNT):
                node.row_key, node.partial_key = row_key, partial_key
    shared = SharedMachine(nodes, starts, sequence, within, fixed)
    shared.final_filled = final_filled(state_input.state)
    return shared
