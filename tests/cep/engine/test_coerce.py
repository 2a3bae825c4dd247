"""Batch input checks (cep/engine/coerce.py): the fast whole-batch path accepts exactly the
batches the per-event path would pass unchanged, and integer ranges are exact at the edges."""
import pytest

import cep
from cep.engine.coerce import RowCoercer

DEF = cep.compile("define stream S (a int, b long, c double, d bool, e string);").streams[0]
EDGES = [(1, (2**31 - 1, 2**63 - 1, 1.0, True, "x")), (2, (-2**31, -2**63, 2.0, False, "y"))]


def test_edges_of_int_and_long_pass_on_the_fast_path():
    c = RowCoercer(DEF)
    assert c._fast(EDGES * 500, 0) == [(t, r, 0) for t, r in EDGES * 500]


@pytest.mark.parametrize("row, attr", [
    ((2**31, 1, 1.0, True, "x"), "a"), ((-2**31 - 1, 1, 1.0, True, "x"), "a"),
    ((1, 2**63, 1.0, True, "x"), "b"), ((1, -2**63 - 1, 1.0, True, "x"), "b"),
    ((True, 1, 1.0, True, "x"), "a"), ((1, 1, 1.0, 1, "x"), "d"),
])
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
