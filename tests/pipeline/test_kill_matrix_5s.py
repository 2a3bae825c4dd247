"""Zero loss, no duplicates: kill -9 of each kind of task with a checkpoint every 5 s
(tests/pipeline/kill_matrix.py has the episodes). Slow: a real Spark cluster. A file per
interval, so that the two run in parallel. The 1 s file runs every rate; this one the highest
(the most events in flight at a kill) unless CEP_KILL_REPEATS asks for the full matrix."""

import pytest

from tests.pipeline.kill_matrix import check_dedup_counted, make_fixture, matrix, run_episode

pytestmark = pytest.mark.slow
km = make_fixture(5.0)


@pytest.mark.parametrize("rate,target,repeat", matrix(rates=(50000,)))
def test_kill_loses_nothing_and_writes_nothing_twice(km, rate, target, repeat):
    run_episode(km, rate, target)


def test_the_replays_duplicates_were_dropped_and_counted_per_sink(km):
    """After the episodes above (pytest runs a module's tests in the order they are defined)."""
    check_dedup_counted(km)
