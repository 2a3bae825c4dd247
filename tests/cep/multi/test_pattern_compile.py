"""Patterns compiled from model expressions (generated conditions and index keys) through the
engine's real selector."""

import pytest

from cep.engine.events import CURRENT
from cep.engine.pattern.compile import compile_pattern, selector_scope
from cep.engine.pattern.runtime import PatternProcessor
from cep.engine.processor import Collector
from cep.engine.selector import QuerySelector, compile_selector
from cep.errors import InvalidQueryError, UnknownAttributeError, UnknownStreamError
from cep.model import (
    And,
    Attribute,
    AttrType,
    BinaryOp,
    CompareOp,
    Constant,
    Filter,
    IsNullStream,
    OutputAttribute,
    Selector,
    SingleInputStream,
    StateInputStream,
    StreamDefinition,
    StreamState,
    Variable,
    Window,
)
from multi_helpers import count, every, nxt, st

ABC = {
    s: StreamDefinition(
        s,
        (
            Attribute("id", AttrType.INT),
            Attribute("sym", AttrType.STRING),
            Attribute("price", AttrType.DOUBLE),
        ),
    )
    for s in "ABC"
}


def fst(stream, alias, cond):
    return StreamState(SingleInputStream(stream, (Filter(cond),), alias=alias))


def build(model, select):
    shared = compile_pattern(model, ABC)
    proc = PatternProcessor(shared)
    sel = Selector(tuple(OutputAttribute(n, e) for n, e in select))
    code = compile_selector(sel, selector_scope(shared, ABC), None, {CURRENT})
    proc.next = QuerySelector(code)
    proc.next.next = Collector()
    return proc, shared


def feed(proc, events):
    for stream, ts, row in events:
        proc.receiver(stream).process([(ts, row, 0)])
    return [(t, r) for t, r, _ in proc.next.next.events]


def test_condition_on_earlier_state_uses_the_index():
    cond = And(
        CompareOp("==", Variable("sym"), Variable("sym", "e1")),
        CompareOp(">", Variable("price"), Variable("price", "e1")),
    )
    model = StateInputStream("pattern", nxt(every(st("A", "e1")), fst("B", "e2", cond)))
    proc, shared = build(
        model,
        [("a", Variable("id", "e1")), ("b", Variable("id", "e2")), ("sym", Variable("sym", "e1"))],
    )
    assert shared.nodes[1].row_key is not None  # e2 is indexed by sym
    got = feed(
        proc,
        [
            ("A", 1000, (1, "IBM", 10.0)),
            ("A", 1100, (2, "MSFT", 50.0)),
            ("B", 1200, (1, "IBM", 9.0)),
            ("B", 1300, (2, "MSFT", 51.0)),
            ("B", 1400, (3, "IBM", 10.5)),
            ("B", 1500, (4, "IBM", 11.0)),
        ],
    )
    assert got == [(1300, (2, 2, "MSFT")), (1400, (1, 3, "IBM"))]
    assert proc.machine.pending_count() == 1  # both partials completed: only the fresh start


def test_count_indexes_and_null_beyond_collected():
    model = StateInputStream("pattern", nxt(count("A", "e1", 1, 3), st("B", "e2")))
    proc, _ = build(
        model,
        [
            ("i0", Variable("id", "e1", index=0)),
            ("i1", Variable("id", "e1", index=1)),
            ("last", Variable("id", "e1", index=("last", 0))),
            ("b", Variable("id", "e2")),
            ("none", IsNullStream("e1", 2)),
        ],
    )
    got = feed(proc, [("A", 1000, (7, "X", 1.0)), ("B", 1100, (1, "X", 1.0))])
    assert got == [(1100, (7, None, 7, 1, True))]


def test_arithmetic_over_states_and_within():
    diff = BinaryOp("-", Variable("price", "e2"), Variable("price", "e1"))
    model = StateInputStream(
        "pattern", nxt(every(st("A", "e1")), st("B", "e2")), within_millis=2000
    )
    proc, _ = build(model, [("a", Variable("id", "e1")), ("d", diff)])
    got = feed(
        proc, [("A", 1000, (1, "X", 1.0)), ("A", 2500, (2, "X", 2.0)), ("B", 3500, (1, "X", 5.0))]
    )
    assert got == [(3500, (2, 3.0))]


def test_unknown_state_alias_is_rejected():
    model = StateInputStream("pattern", nxt(every(st("A", "e1")), st("B", "e2")))
    shared = compile_pattern(model, ABC)
    sel = Selector((OutputAttribute("c", Variable("id", "e3")),))
    with pytest.raises(UnknownStreamError, match="e3"):
        compile_selector(sel, selector_scope(shared, ABC), None, {CURRENT})


def test_bad_state_definitions_are_rejected():
    with pytest.raises(UnknownStreamError, match="Missing"):
        compile_pattern(StateInputStream("pattern", st("Missing", "e1")), ABC)
    with pytest.raises(UnknownAttributeError, match="nope"):
        compile_pattern(
            StateInputStream(
                "pattern",
                nxt(
                    st("A", "e1"),
                    fst("B", "e2", CompareOp(">", Variable("nope"), Constant(1, AttrType.INT))),
                ),
            ),
            ABC,
        )
    windowed = StreamState(SingleInputStream("A", (Window("length", ()),), alias="e1"))
    with pytest.raises(InvalidQueryError, match="only have filters"):
        compile_pattern(StateInputStream("pattern", windowed), ABC)
