"""A pattern's gate: per stream, the events some state could take, picked from a batch before
the state machine sees it.

In a pattern (`->`, not a sequence) made of plain and logical states, an event that no state
of its stream accepts changes nothing: waiting partials stay where they are, and `within` is
checked against each accepting event's time (the periodic sweep only frees memory sooner).
A state can only accept an event whose own-attribute conjuncts hold, so the gate keeps the
events for which, at some state of the stream, the conjuncts of its filter that read only the
event itself are true (or cannot be evaluated: an error keeps the event). When a state of the
stream has no such conjunct, every event may matter and the stream has no gate. Conjuncts with
a function call are left out (a function may read the clock or keep state)."""

from cep.engine.events import CURRENT
from cep.engine.expressions import FALLBACK_ERRORS, compile_expression, make_function
from cep.engine.pattern.plan import LOGICAL, STREAM
from cep.engine.table.keys import and_all, conjuncts
from cep.model.expressions import FunctionCall


def own_conjuncts(expr, sides):
    """The conjuncts of `expr` that read only the arriving event (no other state, no
    function call); `sides(e)` names the inputs an expression reads ('own', 'earlier')."""
    if expr is None:
        return []
    return [c for c in conjuncts(expr) if sides(c) <= {"own"} and sides(c) and not _calls(c)]


def _calls(expr):
    if isinstance(expr, FunctionCall):
        return True
    return any(
        _calls(v)
        for v in vars(expr).values()
        if hasattr(v, "__dict__") and type(v).__module__.startswith("cep.model")
    )


def gate_source(exprs, scope):
    """The compiled test of one state's own conjuncts, or None (no gate for its stream)."""
    if not exprs:
        return None
    return compile_expression(and_all(exprs), scope)


def build_gates(shared):
    """{stream id: gate(batch) -> the events some state may take}, for the streams that have
    one; {} for sequences and patterns with counting, absent or grouped states."""
    nodes = shared.nodes
    if shared.sequence or any(
        n.kind not in (STREAM, LOGICAL) or n.scope is not None for n in nodes
    ):
        return {}
    gates = {}
    for stream, order in shared.order_by_stream.items():
        tests = [nodes[i].gate for i in order]
        if any(t is None for t in tests):
            continue
        g = {"FALLBACK": FALLBACK_ERRORS, "CURRENT": CURRENT}
        for t in tests:
            g.update(t.globals)
        fast = " or ".join(f"({t.fast})" for t in tests)
        safe = " or ".join(f"({t.source})" for t in tests)
        src = (
            "def gate(batch):\n"
            "    try:\n"
            f"        return [x for x in batch for r in (x[1],) if x[2] == CURRENT and ({fast})]\n"
            "    except FALLBACK:\n"
            "        out = []\n"
            "        for x in batch:\n"
            "            if x[2] != CURRENT:\n"
            "                continue\n"
            "            r = x[1]\n"
            "            try:\n"
            f"                if {safe}:\n"
            "                    out.append(x)\n"
            "            except FALLBACK:\n"
            "                out.append(x)\n"
            "        return out\n"
        )
        gates[stream] = make_function("gate", src, g)
    return gates
