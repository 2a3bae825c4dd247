"""Batch input checks (cep/engine/coerce.py): the fast whole-batch path accepts exactly the
batches the per-event path would pass unchanged, and integer ranges are exact at the edges."""

from itertools import chain

import pytest

import cep
from cep.engine.coerce import RowCoercer

DEF = cep.compile("define stream S (a int, b long, c double, d bool, e string);").streams[0]
EDGES = [(1, (2**31 - 1, 2**63 - 1, 1.0, True, "x")), (2, (-(2**31), -(2**63), 2.0, False, "y"))]


def test_edges_of_int_and_long_pass_on_the_fast_path():
    c = RowCoercer(DEF)
    assert c._fast(EDGES * 500, 0) == [(t, r, 0) for t, r in EDGES * 500]


@pytest.mark.parametrize(
    "row, attr",
    [
        ((2**31, 1, 1.0, True, "x"), "a"),
        ((-(2**31) - 1, 1, 1.0, True, "x"), "a"),
        ((1, 2**63, 1.0, True, "x"), "b"),
        ((1, -(2**63) - 1, 1.0, True, "x"), "b"),
        ((True, 1, 1.0, True, "x"), "a"),
        ((1, 1, 1.0, 1, "x"), "d"),
    ],
)
def test_one_bad_value_in_a_big_batch_loses_only_its_event(row, attr):
    c = RowCoercer(DEF)
    batch = EDGES * 300
    batch.insert(421, (5, row))
    assert c._fast(batch, 0) is None
    good, bad = c.coerce(batch, 0)
    assert len(good) == 600 and [i for i, _ in bad] == [421]
    assert f"attribute '{attr}'" in str(bad[0][1])


def test_rows_of_wrong_lengths_that_flatten_to_the_right_types_are_rejected():
    d = cep.compile("define stream T (s string, x double, n long);").streams[0]
    c = RowCoercer(d)
    batch = [(1, ("A", 1.0)), (2, (5, "B", 2.0, 7))]  # flattened: str float int str float int
    assert c._fast(batch, 0) is None
    good, bad = c.coerce(batch, 0)
    assert good == [] and [i for i, _ in bad] == [0, 1]


def test_batch_without_timestamps_takes_the_clock():
    c = RowCoercer(DEF)
    assert c.coerce([(None, r) for _, r in EDGES], 77)[0] == [(77, r, 0) for _, r in EDGES]


WIDE = cep.compile(
    "define stream W (s string, i int, l long, d double, b bool, o object);"
).streams[0]
ODD = [
    "x",
    "",
    0,
    1,
    -1,
    2**31,
    -(2**31) - 1,
    2**31 - 1,
    2**63,
    -(2**63),
    2**63 - 1,
    3.0,
    2.5,
    -0.0,
    float("nan"),
    float("inf"),
    True,
    False,
    None,
    [1],
    (1,),
    {"k": 1},
    b"x",
]


def _random_batch(rnd, bad_rate):
    null = [None] if bad_rate else []  # clean batches: no nulls, no conversions
    good_values = [
        lambda: rnd.choice(["A", "B"] + null),
        lambda: rnd.randint(-5, 5),
        lambda: rnd.randint(-(2**40), 2**40),
        lambda: rnd.choice([rnd.random(), 7 if bad_rate else 7.0]),
        lambda: rnd.choice([True, False] + null),
        lambda: rnd.choice([1, "o"] + null),
    ]
    batch = []
    for i in range(rnd.randint(1, 60)):
        row = [f() for f in good_values]
        if rnd.random() < bad_rate:
            row[rnd.randrange(6)] = rnd.choice(ODD)
        row = tuple(row) if rnd.random() < 0.9 or not bad_rate else row
        ts = 1000 + i
        if rnd.random() < bad_rate / 3:
            ts = rnd.choice([None, 5.0, 5.5, True, "t"])
        if rnd.random() < bad_rate / 5:
            row = row[:-1]
        batch.append((ts, row))
    return batch


def _typed(events):
    return [(ts, tuple((type(v), repr(v)) for v in row), k) for ts, row, k in events]


def test_whole_batch_path_gives_what_the_per_event_path_gives():
    """Random batches, most clean, some with bad or convertible values: the same accepted
    events (values and types) and the same rejected indexes and messages, with and without
    the whole-batch column checks."""
    import random

    rnd = random.Random(4)
    fast, slow = RowCoercer(WIDE), RowCoercer(WIDE)
    slow.fast_ok = False
    WIDE_FAST = cep.compile("define stream V (s string, i int, l long, d double, b bool);").streams[
        0
    ]
    fast5, slow5 = RowCoercer(WIDE_FAST), RowCoercer(WIDE_FAST)
    slow5.fast_ok = False
    assert fast5.fast_ok
    checked = 0
    for n in range(400):
        batch = _random_batch(rnd, bad_rate=0.0 if n % 3 == 0 else 0.05)
        for a, b, rows in ((fast, slow, batch), (fast5, slow5, [(t, r[:5]) for t, r in batch])):
            good_a, bad_a = a.coerce(rows, 99)
            good_b, bad_b = b.coerce(rows, 99)
            assert _typed(good_a) == _typed(good_b), rows
            assert [(i, str(e)) for i, e in bad_a] == [(i, str(e)) for i, e in bad_b]
            if a is fast5 and not n % 3 and None not in chain.from_iterable(r for _, r in rows):
                checked += 1
                assert a._fast(rows, 99) is not None  # clean batches take the fast path
    assert checked > 10


@pytest.mark.parametrize("row, attr", [(("a", 10**400, 1.0), "d"), (("a", 1.0, 10**400), "f")])
def test_an_int_too_big_for_a_double_or_float_loses_only_its_event(row, attr):
    rt = cep.ExecutionPlanRuntime(
        cep.compile("define stream S (s string, d double, f float); from S select * insert into O;")
    )
    got = []
    rt.add_callback("O", got.extend)
    events = [(1, ("ok", 1.0, 1.0)), (2, row), (3, ("ok", 2.0, 2.0))]
    bad = rt.input_handler("S").send_batch(events)
    assert [i for i, _ in bad] == [1] and f"attribute '{attr}'" in str(bad[0][1])
    assert [ts for ts, _ in got] == [1, 3]


def test_msgspec_path_gives_what_the_per_event_path_gives():
    """The same random batches through msgspec (when installed): same accepted events (values
    and types), same rejected indexes and messages as the per-event path."""
    import random
    import msgspec  # noqa: F401  a dependency (setup.cfg): missing is a failure

    rnd = random.Random(8)
    quick, slow = RowCoercer(WIDE), RowCoercer(WIDE)
    assert quick._batch_type is not None
    slow._batch_type, slow.fast_ok = None, False
    taken = 0
    for n in range(400):
        batch = _random_batch(rnd, bad_rate=0.0 if n % 3 == 0 else 0.05)
        good_a, bad_a = quick.coerce(batch, 99)
        good_b, bad_b = slow.coerce(batch, 99)
        assert _typed(good_a) == _typed(good_b), batch
        assert [(i, str(e)) for i, e in bad_a] == [(i, str(e)) for i, e in bad_b]
        taken += not bad_b
    assert taken > 100
