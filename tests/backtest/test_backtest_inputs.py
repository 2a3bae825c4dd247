"""inputs: datasets checked against the stream definition, errors naming the file and column."""

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import cep
from cep.backtest.exceptions import InputError, SpecError
from cep.backtest.inputs import check_input, parse_spec

PLAN = cep.compile(
    "define stream S (sym string, price double, qty int);\nfrom S select * insert into O;"
)
S = PLAN.streams[0]


def parquet(tmp_path, fname="s.parquet", **cols):
    path = tmp_path / fname
    pq.write_table(pa.table(cols), str(path))
    return str(path)


def check(tmp_path, path, **kw):
    return check_input(parse_spec(f"S={path}"), S, "timestamp", str(tmp_path), **kw)


def good_cols():
    return dict(
        timestamp=pa.array([2, 1], pa.int64()),
        sym=["a", "b"],
        price=[1.0, 2.5],
        qty=pa.array([1, 2], pa.int32()),
    )


def test_a_fitting_parquet_file_is_accepted_with_its_row_count(tmp_path):
    cols = good_cols()
    cols["extra"] = [0, 0]  # columns the stream does not declare are ignored
    assert check(tmp_path, parquet(tmp_path, **cols)).rows == 2


def test_missing_column_names_the_column_the_file_and_what_it_has(tmp_path):
    cols = good_cols()
    del cols["price"]
    path = parquet(tmp_path, **cols)
    with pytest.raises(InputError) as err:
        check(tmp_path, path)
    text = str(err.value)
    assert path in text and "'price' missing" in text and "the file has timestamp, sym, qty" in text


def test_dataset_of_another_stream_lists_every_missing_column(tmp_path):
    path = parquet(tmp_path, timestamp=[1], name=["x"], bid=[1.0])
    with pytest.raises(InputError, match=r"columns 'sym', 'price', 'qty' missing"):
        check(tmp_path, path)


def test_wrong_type_names_column_and_declared_type(tmp_path):
    cols = good_cols()
    cols["price"] = ["1.0", "2.0"]
    path = parquet(tmp_path, **cols)
    with pytest.raises(InputError) as err:
        check(tmp_path, path)
    assert path in str(err.value) and "column 'price' has type string" in str(err.value)
    assert "declares price double" in str(err.value)


def test_timestamp_must_be_integer_or_timestamp(tmp_path):
    cols = good_cols()
    cols["timestamp"] = ["x", "y"]
    with pytest.raises(InputError, match="column 'timestamp' .* must be an integer"):
        check(tmp_path, parquet(tmp_path, **cols))


def test_int_attribute_beyond_32_bits_is_refused(tmp_path):
    cols = good_cols()
    cols["qty"] = pa.array([1, 2**40], pa.int64())
    with pytest.raises(InputError, match=r"column 'qty' holds 1099511627776, beyond the 32-bit"):
        check(tmp_path, parquet(tmp_path, **cols))


def test_nulls_are_refused_naming_the_column_unless_allowed(tmp_path):
    cols = good_cols()
    cols["sym"] = ["a", None]
    path = parquet(tmp_path, **cols)
    with pytest.raises(InputError) as err:
        check(tmp_path, path)
    assert path in str(err.value) and "column 'sym' (attribute sym of S) has 1 null value" in str(
        err.value
    )
    assert check(tmp_path, path, allow_nulls=True).rows == 2
    cols = good_cols()
    cols["timestamp"] = pa.array([1, None], pa.int64())
    with pytest.raises(InputError, match="'timestamp' \\(the timestamp of S\\) has 1 null"):
        check(tmp_path, parquet(tmp_path, "t.parquet", **cols), allow_nulls=True)


def test_csv_with_a_bad_value_names_the_file(tmp_path):
    path = tmp_path / "s.csv"
    path.write_text("timestamp,sym,price,qty\n1,a,1.5,3\n2,b,oops,4\n")
    with pytest.raises(InputError) as err:
        check(tmp_path, str(path))
    assert str(path) in str(err.value) and "column 'price'" in str(err.value)
    assert "invalid value 'oops'" in str(err.value)


def test_jsonl_and_csv_are_staged_as_parquet(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_text(
        '{"timestamp": 5, "sym": "a", "price": 1, "qty": 2}\n'
        '{"timestamp": 3, "sym": "b", "price": 2.5, "qty": 1}\n'
    )
    checked = check(tmp_path, str(path))
    table = pq.read_table(checked.parquet)
    assert table.column("price").type == pa.float64() and table.num_rows == 2
    csv = tmp_path / "s.csv"
    csv.write_text("timestamp,sym,price,qty\n1,a,1.5,3\n")
    assert pq.read_table(check(tmp_path, str(csv)).parquet).column("qty").type == pa.int32()


def test_bad_specs(tmp_path):
    with pytest.raises(SpecError, match="expected STREAM=PATH"):
        parse_spec("S")
    with pytest.raises(SpecError, match="unknown format"):
        parse_spec("S=x.xlsx")
    with pytest.raises(InputError, match="no such file"):
        check(tmp_path, str(tmp_path / "none.parquet"))
