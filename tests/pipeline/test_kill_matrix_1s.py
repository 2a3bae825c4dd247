"""Zero loss, no duplicates: kill -9 of each kind of task at 1K, 10K and 50K events/s with a
checkpoint every 1 s (tests/pipeline/kill_matrix.py has the tests). Slow: a real Spark
cluster. A file per interval, so that the two run in parallel."""

import pytest

from tests.pipeline.kill_matrix import (  # noqa: F401 - collected here
    make_fixture,
    test_kill_loses_nothing_and_writes_nothing_twice,
    test_the_replays_duplicates_were_dropped_and_counted_per_sink,
)

pytestmark = pytest.mark.slow
km = make_fixture(1.0)
