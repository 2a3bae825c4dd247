"""The join processor over hand-made sides and plain-Python conditions (rows: Trade
(sym, price, qty), Quote (sym, bid)); scenarios mirror the conformance cases."""

import pytest

from cep.engine.clock import Scheduler
from cep.engine.join.processor import LEFT, RIGHT, JoinProcessor, TableSide
from cep.engine.join.sides import StreamSide
from cep.engine.processor import Collector
from cep.engine.table.store import Table
from cep.engine.windows import WindowEnv
from cep.engine.windows.batch import LengthBatchWindow
from cep.engine.windows.sliding import LengthWindow, TimeWindow
from cep.model import Annotation, Attribute, AttrType, TableDefinition

SYM = lambda r: r[0]  # noqa: E731
ON_SYM = lambda a, b: a[0] == b[0]  # noqa: E731
SCHEDULER = None


def Side(key=None):  # noqa: N802 (no window)
    return StreamSide(None, key)


def _windowed(cls, arg, key=None):
    return StreamSide(cls(WindowEnv(SCHEDULER, True), (arg,)), key)


def LengthSide(n, key=None):  # noqa: N802
    return _windowed(LengthWindow, n, key)


def TimeSide(t, key=None):  # noqa: N802
    return _windowed(TimeWindow, t, key)


def LengthBatchSide(n, key=None):  # noqa: N802
    return _windowed(LengthBatchWindow, n, key)


@pytest.fixture(autouse=True)
def scheduler():
    """The playback scheduler the windows of a test's sides run on."""
    global SCHEDULER
    SCHEDULER = Scheduler(playback=True)
    yield SCHEDULER
    SCHEDULER = None


def join(left, right, on=ON_SYM, keys=(None, None), triggers=(True, True), outer=(False, False)):
    j = JoinProcessor([left, right], on, list(keys), list(triggers), list(outer))
    j.next = Collector()
    return j


def feed(j, events):
    for which, ts, row in events:
        SCHEDULER.advance(ts)  # what the input handler does: fire due timers, then the event
        j.process_side(which, [(ts, row, 0)])
    return [(t, (a and a[1], b and b[1]), k) for t, (a, b), k in j.next.events]


TRADES_QUOTES = [
    (LEFT, 1000, ("IBM", 10.0, 5)),
    (RIGHT, 1100, ("IBM", 9.5)),
    (LEFT, 1200, ("MSFT", 20.0, 1)),
    (RIGHT, 1300, ("MSFT", 19.0)),
    (LEFT, 1400, ("IBM", 11.0, 2)),
    (RIGHT, 1500, ("IBM", 9.8)),
    (LEFT, 1600, ("ORCL", 7.0, 3)),
    (RIGHT, 1700, ("MSFT", 19.5)),
]


@pytest.mark.parametrize("indexed", [False, True])
def test_inner_length_join(indexed):
    keys = (SYM, SYM) if indexed else (None, None)
    j = join(
        LengthSide(2, SYM if indexed else None), LengthSide(2, SYM if indexed else None), keys=keys
    )
    current = [(t, x) for t, x, k in feed(j, TRADES_QUOTES) if k == 0]
    assert current == [
        (1100, (10.0, 9.5)),
        (1300, (20.0, 19.0)),
        (1400, (11.0, 9.5)),
        (1500, (11.0, 9.8)),
    ]


def test_outer_joins_pad_with_none():
    events = [
        (LEFT, 1000, ("IBM", 10.0, 1)),
        (RIGHT, 2000, ("MSFT", 19.0)),
        (RIGHT, 3000, ("IBM", 9.0)),
        (LEFT, 4000, ("MSFT", 20.0, 1)),
    ]
    full = join(LengthSide(2), LengthSide(2), outer=(True, True))
    assert [(t, x) for t, x, k in feed(full, events) if k == 0] == [
        (1000, (10.0, None)),
        (2000, (None, 19.0)),
        (3000, (10.0, 9.0)),
        (4000, (20.0, 19.0)),
    ]
    left = join(LengthSide(2), LengthSide(2), outer=(True, False))
    assert [(t, x) for t, x, k in feed(left, events) if k == 0] == [
        (1000, (10.0, None)),
        (3000, (10.0, 9.0)),
        (4000, (20.0, 19.0)),
    ]


def test_expired_rows_come_first_with_the_evicting_time():
    j = join(LengthSide(1), LengthSide(2))
    got = feed(
        j,
        [
            (RIGHT, 1000, ("IBM", 9.0)),
            (LEFT, 1100, ("IBM", 10.0, 1)),
            (LEFT, 1200, ("IBM", 11.0, 1)),
        ],
    )
    assert got == [(1100, (10.0, 9.0), 0), (1200, (10.0, 9.0), 1), (1200, (11.0, 9.0), 0)]


def test_self_join_pairs_an_event_with_itself_once():
    on = lambda a, b: a[1] == b[1] and a[0] <= b[0]  # noqa: E731 (id, sym)
    j = join(LengthSide(3), LengthSide(3), on=on)
    for ts, row in [
        (1000, (1, "IBM")),
        (2000, (2, "IBM")),
        (3000, (3, "MSFT")),
        (4000, (4, "IBM")),
    ]:
        j.process_self([(ts, row, 0)])
    got = [(t, (a[0], b[0])) for t, (a, b), k in j.next.events if k == 0]
    assert got == [
        (1000, (1, 1)),
        (2000, (1, 2)),
        (2000, (2, 2)),
        (3000, (3, 3)),
        (4000, (2, 4)),
        (4000, (4, 4)),
    ]


def test_side_without_window_keeps_nothing_and_unidirectional():
    j = join(Side(), LengthSide(2))
    got = feed(
        j,
        [
            (LEFT, 1000, ("IBM", 10.0, 1)),
            (RIGHT, 2000, ("IBM", 9.0)),
            (LEFT, 3000, ("IBM", 11.0, 1)),
            (RIGHT, 4000, ("IBM", 9.5)),
        ],
    )
    assert [(t, x) for t, x, k in got if k == 0] == [(3000, (11.0, 9.0))]
    uni = join(Side(), LengthSide(5), triggers=(True, False), outer=(True, False))
    got = feed(
        uni,
        [(RIGHT, 1000, ("IBM", 9.0)), (LEFT, 1500, ("IBM", 10.0, 1)), (LEFT, 1600, ("X", 1.0, 1))],
    )
    # a side without a window is Siddhi's length(0): each event passes, then expires at once
    assert got == [
        (1500, (10.0, 9.0), 0),
        (1500, (10.0, 9.0), 1),
        (1600, (1.0, None), 0),
        (1600, (1.0, None), 1),
    ]


def test_time_window_expiry_by_timer_and_inline():
    j = join(TimeSide(2000), TimeSide(3000))
    feed(j, [(RIGHT, 1000, ("IBM", 9.0)), (LEFT, 1500, ("IBM", 10.0, 1))])
    assert SCHEDULER.next_due() == 3500  # the Trade's (the Quote's is at 4000)
    SCHEDULER.advance(3600)
    assert j.next.events[-1] == (3600, (("IBM", 10.0, 1), ("IBM", 9.0)), 1)
    t = join(TimeSide(5000), TimeSide(5000))
    got = feed(
        t,
        [
            (LEFT, 1000, ("IBM", 10.0, 1)),
            (RIGHT, 3000, ("IBM", 9.0)),
            (RIGHT, 6000, ("IBM", 9.1)),
            (LEFT, 8000, ("IBM", 11.0, 1)),
        ],
    )
    assert [(ts, x) for ts, x, k in got if k == 0] == [(3000, (10.0, 9.0)), (8000, (11.0, 9.1))]


def test_length_batch_side_releases_together():
    j = join(LengthBatchSide(2), LengthSide(3))
    got = feed(
        j,
        [
            (RIGHT, 1000, ("IBM", 9.0)),
            (RIGHT, 1100, ("MSFT", 19.0)),
            (LEFT, 1200, ("IBM", 10.0, 1)),
            (LEFT, 1300, ("MSFT", 20.0, 1)),
            (LEFT, 1400, ("IBM", 11.0, 1)),
            (RIGHT, 1500, ("IBM", 9.5)),
            (LEFT, 1600, ("IBM", 12.0, 1)),
        ],
    )
    assert [(t, x) for t, x, k in got if k == 0] == [
        (1200, (10.0, 9.0)),
        (1300, (20.0, 19.0)),
        (1500, (10.0, 9.5)),
        (1400, (11.0, 9.0)),
        (1400, (11.0, 9.5)),
        (1600, (12.0, 9.0)),
        (1600, (12.0, 9.5)),
    ]


def test_table_side_lookup_by_key():
    tab = Table(
        TableDefinition("Tab", (Attribute("k", AttrType.STRING), Attribute("v", AttrType.DOUBLE)))
    )
    tab.insert([("a", 1.0), ("a", 2.0), ("b", 3.0)])
    j = JoinProcessor(
        [Side(), TableSide(tab, False)],
        lambda a, b: a[0] == b[0],
        [None, None],
        [True, False],
        [True, False],
        want_expired=False,
    )
    j.next = Collector()
    j.process_side(LEFT, [(1, ("a",), 0), (2, ("z",), 0)])
    assert [r for _, r, _ in j.next.events] == [
        (("a",), ("a", 1.0)),
        (("a",), ("a", 2.0)),
        (("z",), None),
    ]


def test_state_round_trip_and_clone():
    j = join(LengthSide(2, SYM), LengthSide(2, SYM), keys=(SYM, SYM))
    feed(j, [(RIGHT, 1000, ("IBM", 9.0))])
    k = j.clone()
    k.next = Collector()
    assert feed(k, [(LEFT, 1100, ("IBM", 1.0, 1))]) == []
    k.set_state(j.get_state())
    assert feed(k, [(LEFT, 1200, ("IBM", 2.0, 1))]) == [(1200, (2.0, 9.0), 0)]


@pytest.mark.parametrize("table_left", [False, True])
def test_keyed_table_lookup_batch_path(table_left):
    tab = Table(
        TableDefinition(
            "Tab",
            (Attribute("k", AttrType.STRING), Attribute("v", AttrType.DOUBLE)),
            (Annotation("IndexBy", elements=((None, "k"),)),),
        )
    )
    tab.insert([("a", 1.0), ("b", 5.0)])
    key = lambda r: r[0]  # noqa: E731
    if table_left:
        j = JoinProcessor(
            [TableSide(tab, True), Side()],
            lambda t, r: t[1] < 3.0,
            [None, key],
            [False, True],
            [False, True],
            want_expired=False,
        )
    else:
        j = JoinProcessor(
            [Side(), TableSide(tab, True)],
            lambda r, t: t[1] < 3.0,
            [key, None],
            [True, False],
            [True, False],
            want_expired=False,
        )
    j.next = Collector()
    stream = RIGHT if table_left else LEFT
    assert j.lookup[stream] is not None  # the whole-batch path is used
    j.process_side(stream, [(1, ("a",), 0), (2, ("b",), 0), (3, ("z",), 0)])
    pairs = [r if not table_left else (r[1], r[0]) for _, r, _ in j.next.events]
    assert pairs == [(("a",), ("a", 1.0)), (("b",), None), (("z",), None)]


def test_a_join_side_state_of_the_earlier_format_is_refused_clearly():
    from cep.errors import SnapshotError

    j = join(LengthSide(2), LengthSide(2))
    with pytest.raises(SnapshotError, match="earlier engine"):
        j.set_state([[(1000, ("IBM", 9.0))], []])
