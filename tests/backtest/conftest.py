"""Backtest fixtures: a real local[2] SparkSession for the module's tests, datasets on disk."""

import os
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from cep.backtest.inputs import ARROW_TYPES


def _require_java():
    if shutil.which("java") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("java is required for the backtest Spark tests (CI=true: not skipping)")
        pytest.skip("java is not installed: Spark cannot start")


@pytest.fixture(scope="session")
def spark():
    """One real local[2] Spark session for the backtest tests (the job's own code path)."""
    _require_java()
    from cep.backtest.session import spark_session

    session = spark_session("backtest:tests[-1234]", "local[2]", 2)
    yield session
    session.stop()


def write_parquet(path, definition, events, ts_column="timestamp"):
    """events: [(ts, row)] of `definition`'s stream, written with the stream's Arrow types."""
    cols = list(zip(*(row for _, row in events))) or [()] * len(definition.attributes)
    arrays = [pa.array([ts for ts, _ in events], pa.int64())]
    arrays += [pa.array(list(c), ARROW_TYPES[a.type]) for c, a in zip(cols, definition.attributes)]
    names = [ts_column] + [a.name for a in definition.attributes]
    pq.write_table(pa.Table.from_arrays(arrays, names=names), str(path))
    return str(path)


def read_output(out_dir, stream):
    """[(ts, row)] of one exported stream, over all its part files (part order)."""
    folder = os.path.join(out_dir, stream)
    events = []
    for name in sorted(os.listdir(folder)):
        table = pq.read_table(os.path.join(folder, name))
        cols = [table.column(i).to_pylist() for i in range(table.num_columns)]
        events += [(r[0], tuple(r[1:])) for r in zip(*cols)]
    return events
