"""Range-sorted partials (`e2.x OP f(e1)` answered by bisection) give exactly what testing
every waiting partial gives, in Siddhi's order, for every comparison operator."""

import operator
import random

import pytest

from cep.engine.events import CURRENT
from cep.engine.pattern.compile import compile_pattern, selector_scope
from cep.engine.pattern.runtime import PatternProcessor
from cep.engine.processor import Collector
from cep.engine.selector import QuerySelector, compile_selector
from cep.model import (
    And,
    Attribute,
    AttrType,
    BinaryOp,
    CompareOp,
    Constant,
    Filter,
    OutputAttribute,
    Selector,
    SingleInputStream,
    StateInputStream,
    StreamDefinition,
    StreamState,
    Variable,
)
from multi_helpers import every, nxt, st

S = {
    "S": StreamDefinition(
        "S",
        (
            Attribute("id", AttrType.INT),
            Attribute("sym", AttrType.STRING),
            Attribute("price", AttrType.DOUBLE),
        ),
    )
}
OPS = {">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le}


def walk(n, seed):
    rnd, px, out = random.Random(seed), [100.0] * 5, []
    for i in range(n):
        k = rnd.randrange(5)
        px[k] = round(px[k] * (1 + (rnd.random() - 0.5) * 0.02), 1)
        out.append((1000 + i * 7, (i, f"K{k}", px[k] if rnd.random() > 0.02 else None), 0))
    return out


def reference(events, op, factor, within):
    """every e1=S -> e2=S[sym == e1.sym and price OP e1.price * factor] within W, by brute
    force: pending partials in filing order, each event completes those it fits."""
    pending, out = [], []
    for ts, row, _ in events:
        keep = []
        for start, first in pending:
            fits = (
                row[1] == first[1]
                and row[2] is not None
                and first[2] is not None
                and OPS[op](row[2], first[2] * factor)
            )
            if fits and ts - start <= within:
                out.append((ts, (first[0], row[0])))
            else:
                keep.append((start, first))
        pending = keep + [(ts, row)]
    return out


@pytest.mark.parametrize("op", sorted(OPS))
def test_ranged_matches_brute_force(op):
    cond = And(
        CompareOp("==", Variable("sym"), Variable("sym", "e1")),
        CompareOp(
            op,
            Variable("price"),
            BinaryOp("*", Variable("price", "e1"), Constant(1.004, AttrType.DOUBLE)),
        ),
    )
    model = StateInputStream(
        "pattern",
        nxt(every(st("S", "e1")), StreamState(SingleInputStream("S", (Filter(cond),), alias="e2"))),
        within_millis=300,
    )
    shared = compile_pattern(model, S)
    assert shared.nodes[1].range is not None  # the sorted path is the one under test
    proc = PatternProcessor(shared)
    sel = Selector(
        (OutputAttribute("a", Variable("id", "e1")), OutputAttribute("b", Variable("id", "e2")))
    )
    proc.next = QuerySelector(compile_selector(sel, selector_scope(shared, S), None, {CURRENT}))
    proc.next.next = sink = Collector()
    events = walk(3000, seed=sorted(OPS).index(op))
    for i in range(0, len(events), 100):
        proc.receiver("S").process(events[i : i + 100])
    want = reference(events, op, 1.004, 300)
    assert [(t, r) for t, r, _ in sink.events] == want and len(want) > 100
