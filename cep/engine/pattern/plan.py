"""Flatten a pattern/sequence StateElement tree into a list of state nodes (an NFA).

Each `StreamState` becomes one node with one slot of the partial match, in source order. The
links between nodes follow Siddhi's pre/post state processors:
  - `next`: the nodes a partial is handed to once this node completes (empty: emit a match);
  - `every_to` / `every_slots`: on completing the last node of an `every` group, a copy of the
    partial with the group's slots cleared goes back to the group's first node(s);
  - logical `and`/`or` pairs share one partial; `partner` names the other side.
Conditions are plain callables `cond(p, r) -> bool` over the partial `p` and the arriving row
`r`; the builder compiles them from the model, tests may pass lambdas.
"""

from dataclasses import dataclass, field
from typing import Callable, Optional

from cep.errors import InvalidQueryError
from cep.model.inputs import (
    AbsentState,
    CountState,
    EveryState,
    LogicalState,
    NextState,
    StreamState,
)

STREAM, COUNT, LOGICAL, ABSENT = "stream", "count", "logical", "absent"


@dataclass
class NodeSpec:
    """One state of the machine: which stream feeds it, its slot and its links."""

    slot: int
    stream_id: str
    alias: Optional[str]
    kind: str = STREAM
    state: object = None  # the model StreamState
    min_count: int = 1
    max_count: Optional[int] = 1
    op: Optional[str] = None  # 'and' | 'or' for logical sides
    for_millis: Optional[int] = None  # `not S for T`: how long S must stay away
    partner: Optional[int] = None
    within: Optional[int] = None  # `within` bounds this state (the last one): ms since the
    # partial's last event (Siddhi 3.2 attaches `within` to the state it follows)
    next: list = field(default_factory=list)
    every_to: list = field(default_factory=list)
    every_slots: tuple = ()
    cond: Optional[Callable] = None
    hits: Optional[Callable] = None  # hits(items, r): the partials the row fits (stream nodes)
    filled: frozenset = frozenset()  # slots certainly holding an event when a partial is here
    range: Optional[tuple] = None  # (op, value(r), threshold(p)): waiting partials sorted
    # `every (...) within T` around this node: its GroupScope (the group's start time, its
    # entries and slots), set by `flatten`
    scope: Optional["GroupScope"] = None
    # equality index: key of the arriving row, key of a waiting partial (patterns only)
    row_key: Optional[Callable] = None
    partial_key: Optional[Callable] = None
    # the condition's compiled expression (its `fast` and null-safe `source`), for loops that
    # inline it (cep.engine.pattern.linear)
    inline: object = None
    # the compiled test of the filter's conjuncts that read only the arriving event, or None
    # (cep.engine.pattern.gate)
    gate: object = None


@dataclass
class GroupScope:
    """An `every (...) within T` group (Siddhi 4 scoping): its events must lie within T of the
    group's first one. `index` numbers the groups: the partial keeps the group's start time
    in an extra slot after the state slots (the machine places it)."""

    index: int
    millis: int
    entries: list
    slots: tuple
    time_slot: Optional[int] = None


@dataclass
class _Piece:
    entries: list
    exits: list
    slots: list
    mandatory: frozenset = frozenset()  # slots filled whenever the piece has completed


def flatten(element):
    """Nodes of `element` in slot order; the first piece's entries are the start nodes."""
    nodes = []
    piece = _walk(element, nodes, frozenset())
    return nodes, piece.entries


def within_slots(element):
    """Slots of the states a trailing `within` bounds (Siddhi 3.2): those of the chain's last
    element, which check the gap to the partial's last event; none when that element is an
    `every` (the `within` then belongs to the `every` step, and 3.2 does not apply it) or a
    logical `and`/`or` (`A -> B and C within T`, also written `A -> (B and C) within T`:
    Siddhi 3.2.15 matches whatever the gaps, as the real engine shows)."""
    total = len(flatten(element)[0])
    while isinstance(element, NextState):
        element = element.then
    if isinstance(element, (EveryState, LogicalState)):
        return ()
    return tuple(range(total - len(flatten(element)[0]), total))


def group_scopes(nodes):
    """The GroupScopes of `nodes` in index order."""
    found = {n.scope.index: n.scope for n in nodes if n.scope is not None}
    return [found[i] for i in sorted(found)]


def final_filled(element):
    """Slots that hold an event in every complete match."""
    return _walk(element, [], frozenset()).mandatory


def _walk(element, nodes, before):
    if isinstance(element, StreamState):
        piece = _leaf(element, nodes, STREAM, before)
        piece.mandatory = before | {piece.entries[0]}
        return piece
    if isinstance(element, CountState):
        piece = _leaf(element.state, nodes, COUNT, before)
        node = nodes[piece.entries[0]]
        node.min_count, node.max_count = element.min_count, element.max_count
        piece.mandatory = before | ({node.slot} if element.min_count >= 1 else set())
        return piece
    if isinstance(element, NextState):
        first = _walk(element.first, nodes, before)
        then = _walk(element.then, nodes, first.mandatory)
        for i in first.exits:
            nodes[i].next = list(then.entries)
        return _Piece(first.entries, then.exits, first.slots + then.slots, then.mandatory)
    if isinstance(element, EveryState):
        inner = _walk(element.inner, nodes, before)
        for i in inner.exits:
            nodes[i].every_to = list(inner.entries)
            nodes[i].every_slots = tuple(inner.slots)
        if element.within_millis is not None:
            _scope(element, inner, nodes)
        return inner
    if isinstance(element, LogicalState):
        return _logical(element, nodes, before)
    if isinstance(element, AbsentState):
        if element.for_millis is None:
            raise InvalidQueryError(
                "`not S` needs `for <time>` unless it is a side of `and`", element.span
            )
        piece = _leaf(element.state, nodes, ABSENT, before)
        nodes[piece.entries[0]].for_millis = element.for_millis
        piece.mandatory = before
        return piece
    raise InvalidQueryError(
        f"unknown pattern element {type(element).__name__}", getattr(element, "span", None)
    )


def _scope(element, inner, nodes):
    index = len({n.scope.index for n in nodes if n.scope is not None})
    scope = GroupScope(index, element.within_millis, list(inner.entries), tuple(inner.slots))
    for i in inner.slots:
        node = nodes[i]
        if node.scope is not None:
            raise InvalidQueryError("`every (...) within` groups cannot be nested", element.span)
        if node.kind not in (STREAM, LOGICAL):
            raise InvalidQueryError(
                "an `every (...) within` group can hold plain and "
                "logical states only (no counting or `not`)",
                element.span,
            )
        node.scope = scope


def _leaf(state, nodes, kind, before):
    stream = state.stream if isinstance(state, StreamState) else state
    node = NodeSpec(
        slot=len(nodes),
        stream_id=stream.stream_id,
        alias=stream.alias,
        kind=kind,
        state=state,
        filled=frozenset(before),
    )
    nodes.append(node)
    return _Piece([node.slot], [node.slot], [node.slot])


def _logical(element, nodes, before):
    op = element.op.lower()
    sides = []
    for side in (element.left, element.right):
        if isinstance(side, AbsentState) and (side.for_millis is not None or op == "and"):
            piece = _leaf(side.state, nodes, ABSENT, before)
            nodes[piece.entries[0]].for_millis = side.for_millis
            sides.append(piece)
            continue
        if not isinstance(side, StreamState):
            raise InvalidQueryError(
                f"each side of a logical `{element.op}` must be a single stream state or "
                f"`not S for T` (`not S` alone only beside `and`)",
                getattr(side, "span", None) or element.span,
            )
        sides.append(_leaf(side, nodes, LOGICAL, before))
    a, b = sides[0].entries[0], sides[1].entries[0]
    untimed = [x for x in (a, b) if nodes[x].kind == ABSENT and nodes[x].for_millis is None]
    if untimed and all(nodes[x].kind == ABSENT for x in (a, b)):
        raise InvalidQueryError(
            "`not S` without `for` needs an event that occurs beside it", element.span
        )
    for me, other in ((a, b), (b, a)):
        nodes[me].op = op
        nodes[me].partner = other
    present = {x for x in (a, b) if nodes[x].kind != ABSENT}
    timed = any(nodes[x].kind == ABSENT and nodes[x].for_millis for x in (a, b))
    # a timed absence completes the pair itself when its deadline passes
    exits = [a, b] if timed else sorted(present)
    return _Piece([a, b], exits, [a, b], before | (present if op == "and" else set()))


def successor_slots(nodes, node):
    """Slots that are filled only after `node` completed: a partial holding one has moved on."""
    out = []
    for i in node.next:
        out.append(nodes[i].slot)
    return tuple(out)
