"""How pattern/sequence expressions reach into a partial match.

The selector sees a match as a composite row `r`: one slot per state. State conditions see the
partial match as `p` and the arriving event's row as `r` (the state's own attributes). A slot
holds a row, None (no event), or for a count state a list of rows: `e[i]`, `e[last]`,
`e[last-k]`, and a bare `e.x` meaning the last one; indexing past what was collected gives null.
"""

from cep.engine.expressions import Compiled, Scope
from cep.errors import UnknownAttributeError, UnknownStreamError
from cep.model import AttrType
from cep.engine.pattern.plan import COUNT


class PatternScope(Scope):
    """Attributes of a pattern's states. `own` (a NodeSpec) is the state whose condition is
    compiled: its unqualified attributes read the arriving row `r`, other states read `p`."""

    state_event = True  # `having` may read the states (Siddhi 3.2)

    def __init__(self, nodes, definitions, own=None, composite="r", filled=frozenset()):
        self.nodes = nodes
        # slots certainly filled where this scope is evaluated: no null guard needed
        self.filled = own.filled if own is not None else frozenset(filled)
        self.defs = definitions  # stream id -> definition
        self.own = own
        self.composite = "p" if own is not None else composite
        self.row_vars = ("p", "r") if own is not None else ("r",)
        self.by_ref = {}
        for n in nodes:
            if n.alias:
                self.by_ref[n.alias] = n
        for n in nodes:
            self.by_ref.setdefault(n.stream_id, n)

    def node_for(self, ref, span=None):
        node = self.by_ref.get(ref)
        if node is None:
            known = ", ".join(sorted(self.by_ref))
            raise UnknownStreamError(
                f"'{ref}' is not a state of this pattern (its states are {known})", span
            )
        return node

    def resolve(self, variable):
        if variable.stream is None:
            node = self.own if self.own is not None else self._unique_owner(variable)
        else:
            node = self.node_for(variable.stream, variable.span)
        d = self.defs[node.stream_id]
        i = d.index_of(variable.name)
        if i < 0:
            raise UnknownAttributeError(
                f"attribute '{variable.name}' does not exist in '{node.alias or node.stream_id}'"
                f" (stream {d.id} has {', '.join(d.attribute_names)})",
                variable.span,
            )
        t = d.attributes[i].type
        if node is self.own and variable.index is None:
            return f"r[{i}]", t
        return self._slot_source(node, variable.index, i, own=node is self.own), t

    def _slot_source(self, node, index, i, own=False):
        s = f"{self.composite}[{node.slot}]"
        if node.kind != COUNT:
            if node.slot in self.filled:
                return f"{s}[{i}]"
            return f"({s}[{i}] if {s} is not None else None)"
        if index is None:
            index = ("last", 0)
        if isinstance(index, tuple):
            # in a count state's own condition the list already holds the arriving row, but
            # `e[last-k]` counts from the rows collected before it (Siddhi 3.2: `e2[last]` is
            # the previous row, null at the first), while `e[k]` indexes the list as it is
            off = index[1] + (1 if own else 0)
            return f"({s}[{-1 - off}][{i}] if {s} and len({s}) > {off} else None)"
        return f"({s}[{index}][{i}] if {s} and len({s}) > {index} else None)"

    def _unique_owner(self, variable):
        owners = [n for n in self.nodes if self.defs[n.stream_id].index_of(variable.name) >= 0]
        if not owners:
            raise UnknownAttributeError(
                f"attribute '{variable.name}' does not exist in any state of the pattern",
                variable.span,
            )
        return owners[0]

    def compile_is_null_stream(self, e, gen):
        node = self.node_for(e.stream, e.span)
        s = f"{self.composite}[{node.slot}]"
        if e.index is None or node.kind != COUNT:
            src = f"({s} is None)"
        else:
            k = e.index[1] if isinstance(e.index, tuple) else e.index
            src = f"(not {s} or len({s}) <= {k})"
        return Compiled(src, src, AttrType.BOOL, {}, nullable=False, simple=True)

    def select_all(self):
        """`select *` over a pattern: every attribute of every state, in state order."""
        from cep.model import Variable

        items = []
        for n in self.nodes:
            ref = n.alias or n.stream_id
            for a in self.defs[n.stream_id].attributes:
                items.append((a.name, Variable(a.name, ref)))
        return items
