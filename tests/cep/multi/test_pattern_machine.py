"""The pattern/sequence state machine over hand-built models and plain-Python conditions.

Scenarios mirror the conformance cases (Siddhi 3 behaviour); rows are (id, sym, price)."""

import pickle

import pytest

from cep.engine.pattern.machine import compile_machine
from multi_helpers import count, every, logical, nxt, pattern, st

ID, SYM, PRICE = 0, 1, 2


def machine(model, conds=None, keys=None):
    """conds: alias -> cond(p, r); keys: alias -> (row_key, partial_key)."""
    conds, keys = conds or {}, keys or {}

    def conditions(node, nodes):
        rk, pk = keys.get(node.alias, (None, None))
        return conds.get(node.alias), rk, pk

    return compile_machine(model, conditions).machine()


def run(m, events, pick):
    """events: (stream, ts, row); pick(slots) -> output tuple."""
    out = []
    for stream, ts, row in events:
        got = []
        m.process(stream, [(ts, row, 0)], got)
        out.extend((t, pick(slots)) for t, slots, _ in got)
    return out


def ids(*slots):
    def pick(p):
        return tuple(None if p[s] is None else p[s][ID] for s in slots)

    return pick


def ev(stream, ts, i, sym="X", price=1.0):
    return (stream, ts, (i, sym, price))


def test_no_every_matches_once():
    m = machine(pattern(nxt(st("A", "e1"), st("B", "e2"))))
    events = [
        ev("A", 1000, 1),
        ev("A", 1100, 2),
        ev("B", 1200, 1),
        ev("B", 1300, 2),
        ev("A", 1400, 3),
        ev("B", 1500, 3),
    ]
    assert run(m, events, ids(0, 1)) == [(1200, (1, 1))]


def test_every_within_is_inclusive():
    m = machine(pattern(nxt(every(st("A", "e1")), st("B", "e2")), within=2000))
    events = [
        ev("A", 1000, 1),
        ev("A", 2500, 2),
        ev("B", 3500, 1),
        ev("A", 4000, 3),
        ev("B", 6000, 2),
        ev("A", 7000, 4),
        ev("B", 9001, 3),
    ]
    assert run(m, events, ids(0, 1)) == [(3500, (2, 1)), (6000, (3, 2))]


def test_every_grouped_restarts_after_completion():
    m = machine(pattern(every(nxt(st("A", "e1"), st("B", "e2")))))
    events = [
        ev("A", 1000, 1),
        ev("A", 1100, 2),
        ev("B", 1200, 1),
        ev("B", 1300, 2),
        ev("A", 1400, 3),
        ev("A", 1500, 4),
        ev("B", 1600, 3),
    ]
    assert run(m, events, ids(0, 1)) == [(1200, (1, 1)), (1600, (3, 3))]


@pytest.mark.parametrize("indexed", [False, True])
def test_condition_on_earlier_state(indexed):
    conds = {"e2": lambda p, r: r[SYM] == p[0][SYM] and r[PRICE] > p[0][PRICE]}
    keys = {"e2": (lambda r: r[SYM], lambda p: p[0][SYM])} if indexed else None
    m = machine(pattern(nxt(every(st("A", "e1")), st("B", "e2"))), conds, keys)
    events = [
        ev("A", 1000, 1, "IBM", 10.0),
        ev("A", 1100, 2, "MSFT", 50.0),
        ev("B", 1200, 1, "IBM", 9.0),
        ev("B", 1300, 2, "MSFT", 51.0),
        ev("B", 1400, 3, "IBM", 10.5),
        ev("B", 1500, 4, "IBM", 11.0),
    ]
    assert run(m, events, ids(0, 1)) == [(1300, (2, 2)), (1400, (1, 3))]


def test_exact_count_and_indexes():
    m = machine(pattern(nxt(count("A", "e1", 3, 3), st("B", "e2"))))
    events = [ev("A", 1000 + 100 * i, i + 1) for i in range(5)] + [ev("B", 1500, 1)]
    pick = lambda p: (p[0][0][ID], p[0][2][ID], p[0][-1][ID], p[1][ID])  # noqa: E731
    assert run(m, events, pick) == [(1500, (1, 3, 3, 1))]


def test_count_range_keeps_what_it_has():
    m = machine(pattern(nxt(count("A", "e1", 1, 3), st("B", "e2"))))
    got = run(m, [ev("A", 1000, 7), ev("B", 1100, 1)], lambda p: (len(p[0]), p[1][ID]))
    assert got == [(1100, (1, 1))]


def test_or_final_state_other_side_null():
    m = machine(pattern(nxt(every(st("A", "e1")), logical("or", st("B", "e2"), st("C", "e3")))))
    events = [
        ev("A", 1000, 1),
        ev("C", 1100, 1),
        ev("A", 1200, 2),
        ev("B", 1300, 2),
        ev("C", 1400, 3),
    ]
    assert run(m, events, ids(0, 1, 2)) == [(1100, (1, None, 1)), (1300, (2, 2, None))]


def test_and_needs_both_sides():
    m = machine(pattern(nxt(st("A", "e1"), logical("and", st("B", "e2"), st("C", "e3")))))
    events = [ev("A", 1000, 1), ev("C", 1100, 5), ev("C", 1150, 6), ev("B", 1200, 7)]
    assert run(m, events, ids(0, 1, 2)) == [(1200, (1, 7, 5))]


def test_overlapping_three_states():
    m = machine(pattern(nxt(every(st("A", "e1")), st("B", "e2"), st("C", "e3"))))
    events = [
        ev("A", 1000, 1),
        ev("A", 1100, 2),
        ev("B", 1200, 1),
        ev("B", 1250, 2),
        ev("C", 1300, 1),
        ev("C", 1400, 2),
    ]
    assert run(m, events, ids(0, 1, 2)) == [(1300, (1, 1, 1)), (1300, (2, 1, 1))]


def test_same_stream_event_cannot_complete_its_own_match():
    conds = {"e2": lambda p, r: r[1] > p[0][1]}
    m = machine(pattern(nxt(every(st("S", "e1")), st("S", "e2"))), conds)
    events = [
        ("S", 1000, (1, 10.0)),
        ("S", 1100, (2, 12.0)),
        ("S", 1200, (3, 11.0)),
        ("S", 1300, (4, 13.0)),
    ]
    assert run(m, events, ids(0, 1)) == [(1100, (1, 2)), (1300, (2, 4)), (1300, (3, 4))]


def test_every_on_second_state():
    m = machine(pattern(nxt(st("A", "e1"), every(st("B", "e2")))))
    events = [
        ev("B", 900, 0),
        ev("A", 1000, 1),
        ev("B", 1100, 1),
        ev("B", 1200, 2),
        ev("A", 1300, 2),
        ev("B", 1400, 3),
    ]
    assert run(m, events, ids(0, 1)) == [(1100, (1, 1)), (1200, (1, 2)), (1400, (1, 3))]


def seq(*elements, within=None):
    return pattern(nxt(*elements), within=within, kind="sequence")


def test_sequence_strict_every():
    m = machine(seq(every(st("A", "e1")), st("B", "e2")))
    events = [
        ev("A", 1000, 1),
        ev("B", 1100, 1),
        ev("A", 1200, 2),
        ev("A", 1300, 3),
        ev("B", 1400, 2),
        ev("B", 1500, 3),
    ]
    assert run(m, events, ids(0, 1)) == [(1100, (1, 1)), (1400, (3, 2))]


def test_sequence_plus_star_question():
    plus = machine(seq(every(st("A", "e1")), count("B", "e2", 1, None), st("C", "e3")))
    events = [
        ev("A", 1000, 1),
        ev("C", 1100, 1),
        ev("A", 1200, 2),
        ev("B", 1300, 1),
        ev("B", 1400, 2),
        ev("B", 1500, 3),
        ev("C", 1600, 2),
    ]
    pick = lambda p: (p[0][ID], p[1] and p[1][0][ID], p[1] and p[1][-1][ID], p[2][ID])  # noqa
    assert run(plus, events, pick) == [(1600, (2, 1, 3, 2))]
    star = machine(seq(every(st("A", "e1")), count("B", "e2", 0, None), st("C", "e3")))
    events = [
        ev("A", 1000, 1),
        ev("C", 1100, 1),
        ev("A", 1200, 2),
        ev("B", 1300, 1),
        ev("B", 1400, 2),
        ev("C", 1500, 2),
    ]
    assert run(star, events, pick) == [(1100, (1, None, None, 1)), (1500, (2, 1, 2, 2))]
    opt = machine(seq(every(st("A", "e1")), count("B", "e2", 0, 1), st("C", "e3")))
    events = [
        ev("A", 1000, 1),
        ev("C", 1100, 1),
        ev("A", 1200, 2),
        ev("B", 1300, 1),
        ev("C", 1400, 2),
        ev("A", 1500, 3),
        ev("B", 1600, 2),
        ev("B", 1700, 3),
        ev("C", 1800, 3),
    ]
    assert run(opt, events, pick) == [(1100, (1, None, None, 1)), (1400, (2, 1, 1, 2))]


def test_sequence_peak_detection():
    conds = {"e2": lambda p, r: r[1] > p[0][1], "e3": lambda p, r: r[1] < p[1][-1][1]}
    m = machine(seq(every(st("S", "e1")), count("S", "e2", 1, None), st("S", "e3")), conds)
    prices = [10.0, 11.0, 13.0, 12.0, 15.0, 16.0, 14.0]
    events = [("S", 1000 + 100 * i, (i + 1, x)) for i, x in enumerate(prices)]
    pick = lambda p: (p[0][1], p[1][-1][1], p[2][1])  # noqa: E731
    assert run(m, events, pick) == [(1300, (10.0, 13.0, 12.0)), (1600, (12.0, 16.0, 14.0))]


def test_sequence_three_thresholds_and_pairs():
    conds = {
        "e1": lambda p, r: r[1] > 10,
        "e2": lambda p, r: r[1] > 20,
        "e3": lambda p, r: r[1] > 30,
    }
    m = machine(seq(every(st("S", "e1")), st("S", "e2"), st("S", "e3")), conds)
    prices = [15, 25, 5, 35, 11, 21, 31, 41]
    events = [("S", 1000 + 100 * i, (i + 1, x)) for i, x in enumerate(prices)]
    assert run(m, events, ids(0, 1, 2)) == [(1600, (5, 6, 7)), (1700, (6, 7, 8))]
    pairs = machine(seq(every(st("S", "e1")), st("S", "e2")))
    events = [("S", 1000 + 100 * i, (i + 1, 1.0)) for i in range(4)]
    assert run(pairs, events, ids(0, 1)) == [(1100, (1, 2)), (1200, (2, 3)), (1300, (3, 4))]


def test_sequence_within_and_or():
    m = machine(seq(every(st("A", "e1")), st("B", "e2"), within=2000))
    events = [
        ev("A", 1000, 1),
        ev("B", 3500, 1),
        ev("A", 4000, 2),
        ev("B", 5000, 2),
        ev("A", 6000, 3),
        ev("B", 8000, 3),
    ]
    assert run(m, events, ids(0, 1)) == [(5000, (2, 2)), (8000, (3, 3))]
    m = machine(seq(every(st("A", "e1")), logical("or", st("B", "e2"), st("C", "e3"))))
    events = [
        ev("A", 1000, 1),
        ev("C", 1100, 1),
        ev("A", 1200, 2),
        ev("B", 1300, 2),
        ev("A", 1400, 3),
        ev("A", 1500, 4),
        ev("C", 1600, 3),
    ]
    assert run(m, events, ids(0, 1, 2)) == [
        (1100, (1, None, 1)),
        (1300, (2, 2, None)),
        (1600, (4, None, 3)),
    ]


def test_batch_equals_one_at_a_time():
    conds = {"e2": lambda p, r: r[SYM] == p[0][SYM] and r[PRICE] > p[0][PRICE]}
    keys = {"e2": (lambda r: r[SYM], lambda p: p[0][SYM])}
    model = pattern(nxt(every(st("S", "e1")), st("S", "e2")), within=50)
    events = [("S", 1000 + i, (i, "K%d" % (i * 7 % 5), float(i * 37 % 11))) for i in range(300)]
    one = run(machine(model, conds, keys), events, ids(0, 1))
    m = machine(model, conds, keys)
    out = []
    m.process("S", [(ts, row, 0) for _, ts, row in events], out)
    assert [(t, ids(0, 1)(p)) for t, p, _ in out] == one and len(one) > 50


def test_within_sweep_bounds_pending_partials():
    conds = {"e2": lambda p, r: r[PRICE] > p[0][PRICE] * 100}
    keys = {"e2": (lambda r: r[SYM], lambda p: p[0][SYM])}
    m = machine(pattern(nxt(every(st("S", "e1")), st("S", "e2")), within=100), conds, keys)
    for i in range(5000):
        m.process("S", [(i, (i, "K%d" % (i % 1000), 1.0), 0)], [])
    assert m.pending_count() <= 300  # ~within + sweep period worth, not 5000


def test_snapshot_restores_partials_exactly():
    conds = {"e2": lambda p, r: r[SYM] == p[0][SYM]}
    keys = {"e2": (lambda r: r[SYM], lambda p: p[0][SYM])}
    model = pattern(nxt(every(st("A", "e1")), st("B", "e2")))
    m = machine(model, conds, keys)
    run(m, [ev("A", 1000, 1, "X"), ev("A", 1100, 2, "Y")], ids(0, 1))
    blob = pickle.dumps(m.get_state())
    fresh = machine(model, conds, keys)
    fresh.set_state(pickle.loads(blob))
    assert run(fresh, [ev("B", 1200, 9, "Y")], ids(0, 1)) == [(1200, (2, 9))]
    assert m.clone().pending_count() == 1  # a clone starts empty (only the fresh start)
