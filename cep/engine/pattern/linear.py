"""A sequence of plain states over one stream, `[every] e1=S[c1], e2=S[c2], ..., en=S[cn]`
(no counts, logical states, absences, groups or `within`), as one generated loop over a batch.

In such a sequence the general machine (nfa.StateMachine) holds at most one partial per state:
a state is handed at most one partial per event (first wins), a partial the event does not
fit is dropped (strict contiguity), and the start state re-arms after every event, with or
without `every` (Siddhi 3.2). A match is therefore n consecutive events of the stream with
each state's condition true over the events before it. The loop keeps those partials in
locals, evaluates each state's condition inline (its fast form, its null-safe form on a
fallback error, as the machine's `cond` does), and leaves the machine's state in the form
the machine keeps it (pending lists of one partial), so snapshots are the machine's.
"""

from cep.engine.events import CURRENT
from cep.engine.expressions import FALLBACK_ERRORS, make_function
from cep.engine.pattern.plan import STREAM


def is_linear(shared):
    """True when `shared` (a SharedMachine) is a sequence the loop runs."""
    nodes = shared.nodes
    return (
        shared.sequence
        and shared.within is None
        and len(nodes) >= 2
        and not shared.scopes
        and not shared.count_slots
        and shared.starts == [0]
        and len({n.stream_id for n in nodes}) == 1
        and all(
            n.kind == STREAM
            and n.scope is None
            and n.row_key is None
            and (n.cond is None or n.inline is not None)
            for n in nodes
        )
        and all(n.next == [n.slot + 1] for n in nodes[:-1])
        and not nodes[-1].next
        and (not nodes[0].every_to or (nodes[0].every_to == [0] and 0 in shared.fresh_every))
        and all(not n.every_to for n in nodes[1:])
    )


def build_linear(shared):
    """`run(machine, batch, out)`, or None when the sequence is not of this shape."""
    if not is_linear(shared):
        return None
    nodes, n, width = shared.nodes, len(shared.nodes), shared.width
    g = {"FALLBACK": FALLBACK_ERRORS, "CURRENT": CURRENT}
    waiting = [f"w{i}" for i in range(1, n)]
    lines = [
        "def run(m, batch, out):",
        "    pending = m.pending",
        *[f"    w{i} = pending[{i}][0] if pending[{i}] else None" for i in range(1, n)],
        "    last = None",
        "    for ts, r, kind in batch:",
        "        if kind != CURRENT:",
        "            continue",
        "        last = ts",
    ]
    for i in range(n - 1, -1, -1):
        node, ind = nodes[i], "        "
        if i == 0:
            lines.append(f"{ind}p = [None] * {width}")
            lines.append(f"{ind}n1 = None")
        else:
            if i < n - 1:
                lines.append(f"{ind}n{i + 1} = None")
            lines += [f"{ind}p = w{i}", f"{ind}if p is not None:"]
            ind += "    "
        test = "True"
        if node.inline is not None:
            c = node.inline
            g.update(c.globals)
            lines += [
                f"{ind}try:",
                f"{ind}    ok = {c.fast}",
                f"{ind}except FALLBACK:",
                f"{ind}    ok = {c.source}",
            ]
            test = "ok"
        lines += [f"{ind}if {test}:", f"{ind}    p[{i}] = r", f"{ind}    p[-1] = ts"]
        if i == n - 1:
            lines += [
                f"{ind}    out.append((ts, tuple(p[:{n}]), CURRENT))",
                f"{ind}    m.emitted = True",
            ]
        else:
            lines.append(f"{ind}    n{i + 1} = p")
    lines.append(f"        {', '.join(waiting)} = {', '.join(f'n{i}' for i in range(1, n))}")
    lines += [
        "    if last is not None:",
        "        m.now = last",
        "        m.seen[m.stream] = last",
        *[f"    pending[{i}] = [w{i}] if w{i} is not None else []" for i in range(1, n)],
        f"    pending[0] = [[None] * {width}]",
    ]
    return make_function("run", "\n".join(lines) + "\n", g)
