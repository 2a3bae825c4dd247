"""Zero loss, no duplicates: kill -9 of each kind of task at 1K, 10K and 50K events/s with a
checkpoint every 5 s (tests/pipeline/kill_matrix.py). Slow: a real Spark cluster."""
import pytest

from tests.pipeline.kill_matrix import (check_dedup_counted, kill_matrix_fixture, matrix,
                                        run_episode)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def km(tmp_path_factory):
    yield from kill_matrix_fixture(tmp_path_factory, 5.0)


@pytest.mark.parametrize("rate,target,repeat", matrix())
def test_kill_loses_nothing_and_writes_nothing_twice(km, rate, target, repeat):
    run_episode(km, rate, target)


def test_the_replays_duplicates_were_dropped_and_counted_per_sink(km):
    check_dedup_counted(km)
