"""The public columnar API: InputHandler.send_columns / send_arrow (checks per column, clear
errors, bad events left out and the others processed), columnar callbacks (Columns from
columnar kernels and from row-path queries alike), and the fallback to rows for queries
without a kernel."""

import numpy as np
import pyarrow as pa
import pytest

import cep
from cep.engine.columnar import Columns
from cep.errors import EventError

HEAD = "@Plan:playback\ndefine stream S (sym string, price double, vol long, x int);\n"


def rt_for(query):
    return cep.ExecutionPlanRuntime(cep.compile(HEAD + query))


def cols(n=4, **over):
    data = {
        "sym": np.array(["a", "b", "a", "c"][:n], object),
        "price": np.array([1.5, 600.0, 700.0, 2.0][:n]),
        "vol": np.array([1, 2, 3, 4][:n], np.int64),
        "x": np.array([1, 2, 3, 4][:n], np.int32),
    }
    data.update(over)
    return data


def test_send_columns_filter_projection_columnar_callback():
    rt = rt_for("from S[price > 500.0] select sym, price insert into Out;")
    got = []
    rt.add_callback("Out", got.append, columnar=True)
    assert rt.input_handler("S").send_columns(cols(), np.arange(1000, 1004)) == []
    (c,) = got
    assert isinstance(c, Columns) and len(c) == 2
    assert c.timestamps.tolist() == [1001, 1002]
    assert c["sym"].tolist() == ["b", "a"] and c["price"].dtype == np.float64
    assert c.to_rows() == [(1001, ("b", 600.0)), (1002, ("a", 700.0))]


def test_row_callback_on_columnar_input_and_columnar_callback_on_row_input():
    rt = rt_for("from S[price > 500.0] select sym, price insert into Out;")
    rows, columnar = [], []
    rt.add_callback("Out", rows.extend)
    rt.add_callback("Out", columnar.append, columnar=True)
    h = rt.input_handler("S")
    h.send_columns(cols(), np.arange(1000, 1004))
    h.send_batch([(2000, ("z", 900.0, 5, 6))])
    assert rows == [(1001, ("b", 600.0)), (1002, ("a", 700.0)), (2000, ("z", 900.0))]
    assert [c.to_rows() for c in columnar] == [rows[:2], rows[2:]]


def test_missing_extra_and_wrong_dtype_columns_raise_and_process_nothing():
    rt = rt_for("from S select * insert into Out;")
    got = []
    rt.add_callback("Out", got.extend)
    h = rt.input_handler("S")
    data = cols()
    del data["x"]
    with pytest.raises(EventError, match="lack x"):
        h.send_columns(data)
    with pytest.raises(EventError, match="unknown y"):
        h.send_columns({**cols(), "y": [1, 2, 3, 4]})
    with pytest.raises(EventError, match="attribute 'vol' .*float64 cannot hold long"):
        h.send_columns(cols(vol=np.array([1.0, 2.0, 3.0, 4.0])))
    with pytest.raises(EventError, match="column 'vol' has 3 values"):
        h.send_columns(cols(vol=np.array([1, 2, 3])))
    with pytest.raises(EventError, match="timestamps must be integers"):
        h.send_columns(cols(), np.array([1.0, 2.0, 3.0, 4.0]))
    assert got == []


def test_an_empty_batch_with_an_empty_timestamp_list_sends_nothing():
    rt = rt_for("from S#window.length(2) select sum(vol) as v insert into Out;")
    got = []
    rt.add_callback("Out", got.extend)
    h = rt.input_handler("S")
    assert h.send_columns(cols(0), []) == []  # a plain empty list, as a user writes it
    assert h.send_columns(cols(2), [10, 11]) == [] and got == [(10, (1,)), (11, (3,))]
    with pytest.raises(EventError, match="timestamps must be integers"):
        h.send_columns(cols(0), [[]])  # not one-dimensional


def test_bad_values_are_left_out_with_their_index_and_the_rest_go_on():
    rt = rt_for("from S select * insert into Out;")
    got = []
    rt.add_callback("Out", got.extend)
    bad = rt.input_handler("S").send_columns(
        cols(x=np.array([1, 2**40, 3, 4], np.int64), sym=np.array(["a", "b", 5, "c"], object)),
        np.arange(1000, 1004),
    )
    assert [i for i, _ in bad] == [1, 2]
    assert "attribute 'x' (int)" in str(bad[0][1]) and "out of the range" in str(bad[0][1])
    assert "attribute 'sym' (string)" in str(bad[1][1])
    assert got == [(1000, ("a", 1.5, 1, 1)), (1003, ("c", 2.0, 4, 4))]


def test_arrow_record_batch_with_nulls_and_python_lists():
    rt = rt_for(
        "from S#window.length(2) select sym, sum(price) as s, count() as c insert into Out;"
    )
    got = []
    rt.add_callback("Out", got.extend)
    batch = pa.record_batch(
        {
            "sym": ["a", None, "b"],
            "price": [1.0, None, 2.5],
            "vol": pa.array([1, 2, None], pa.int64()),
            "x": pa.array([1, None, 3], pa.int32()),
        }
    )
    assert rt.input_handler("S").send_arrow(batch, pa.array([10, 11, 12])) == []
    rt.input_handler("S").send_columns({"sym": ["c"], "price": [4], "vol": [None], "x": [9]}, [13])
    assert got == [
        (10, ("a", 1.0, 1)),
        (11, (None, 1.0, 2)),
        (12, ("b", 2.5, 2)),
        (13, ("c", 6.5, 2)),
    ]


def test_window_keeps_its_own_copy_of_reused_arrays():
    rt = rt_for("from S#window.length(3) select sum(vol) as v insert into Out;")
    got = []
    rt.add_callback("Out", got.extend)
    h = rt.input_handler("S")
    data = cols(
        n=2,
        sym=np.array(["a", "b"], object),
        price=np.array([1.0, 2.0]),
        vol=np.array([10, 20], np.int64),
        x=np.array([1, 2], np.int32),
    )
    h.send_columns(data, np.array([1, 2]))
    data["vol"][:] = [1000, 2000]  # the producer reuses its buffer
    h.send_columns(data, np.array([3, 4]))
    assert [r[0] for _, r in got] == [10, 30, 1030, 3020]


def test_queries_without_a_kernel_get_the_events_as_rows():
    query = "partition with (sym of S) begin from S select sym, sum(vol) as v insert into Out; end;"
    rt, ref = rt_for(query), rt_for(query)
    got, want = [], []
    rt.add_callback("Out", got.append, columnar=True)
    ref.add_callback("Out", want.extend)
    rt.input_handler("S").send_columns(cols(), np.arange(1000, 1004))
    ref.input_handler("S").send_batch(
        [
            (1000 + i, r)
            for i, r in enumerate(
                [("a", 1.5, 1, 1), ("b", 600.0, 2, 2), ("a", 700.0, 3, 3), ("c", 2.0, 4, 4)]
            )
        ]
    )
    assert [r for c in got for r in c.to_rows()] == want
    assert sorted(r for _, r in want) == [("a", 1), ("a", 4), ("b", 2), ("c", 4)]


def test_timestamps_default_to_the_runtime_clock():
    rt = cep.ExecutionPlanRuntime(
        cep.compile(
            "define stream S (sym string, price double, vol long, x int);\n"
            "from S select sym insert into Out;"
        )
    )
    got = []
    rt.add_callback("Out", got.extend)
    rt.input_handler("S").send_columns(
        cols(
            n=1,
            sym=np.array(["a"], object),
            price=np.array([1.0]),
            vol=np.array([1]),
            x=np.array([1], np.int32),
        )
    )
    rt.shutdown()
    assert len(got) == 1 and got[0][0] > 1_600_000_000_000
