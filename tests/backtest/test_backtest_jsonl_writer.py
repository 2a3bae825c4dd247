"""The JSON-lines output writer (one encode per chunk) writes what the json module would: the
same objects line by line, nulls as null, NaN and infinities as json's NaN/Infinity tokens, and
object values as their str()."""

import json
import math

from cep.backtest.outputs import ColumnWriter, OutputWriter
from cep.model.definitions import Attribute, StreamDefinition
from cep.model.types import AttrType

import numpy as np


def _lines(path):
    with open(path) as f:
        return [json.loads(x) for x in f.read().splitlines()]


def definition(*types):
    return StreamDefinition("Out", tuple(Attribute(f"a{i}", t) for i, t in enumerate(types)))


def test_rows_come_out_as_the_json_module_writes_them(tmp_path):
    d = definition(AttrType.STRING, AttrType.DOUBLE, AttrType.LONG, AttrType.BOOL, AttrType.INT)
    w = OutputWriter(str(tmp_path), "Out", d, "jsonl", 0, 1000)
    rows = [
        (1000 + i, (f"k\n{i}", i * 0.1, 2**62 + i, i % 2 == 0, None if i % 3 else i))
        for i in range(300)
    ]
    w.add(rows)
    w.close()
    got = _lines(w.path)
    want = [dict(zip(["timestamp", "a0", "a1", "a2", "a3", "a4"], (t, *r))) for t, r in rows]
    assert [list(g) for g in got[:1]] == [["timestamp", "a0", "a1", "a2", "a3", "a4"]]
    assert got == want


def test_non_finite_doubles_and_objects_take_the_json_module(tmp_path):
    w = OutputWriter(
        str(tmp_path), "Out", definition(AttrType.DOUBLE, AttrType.DOUBLE), "jsonl", 0, 1000
    )
    w.add([(1, (math.nan, None)), (2, (math.inf, -math.inf)), (3, (1.5, 2.0))])
    w.close()
    text = open(w.path).read()
    assert "NaN" in text and "Infinity" in text and "-Infinity" in text
    got = _lines(w.path)
    assert (
        math.isnan(got[0]["a0"])
        and got[0]["a1"] is None
        and got[2] == {"timestamp": 3, "a0": 1.5, "a1": 2.0}
    )
    o = OutputWriter(str(tmp_path / "o"), "Out", definition(AttrType.OBJECT), "jsonl", 0, 1000)
    o.add([(1, ({"x": 1},)), (2, (None,))])
    o.close()
    assert _lines(o.path) == [{"timestamp": 1, "a0": "{'x': 1}"}, {"timestamp": 2, "a0": None}]


def test_kernel_columns_as_json_lines(tmp_path):
    d = definition(AttrType.STRING, AttrType.DOUBLE)
    w = ColumnWriter(str(tmp_path), "Out", d, "jsonl", 0, 1000, suffix="-k0")
    w.write_columns(
        np.array([5, 6], np.int64),
        {"a0": np.array(["A", "B"], object), "a1": np.array([0.25, 1e300])},
    )
    w.close()
    assert _lines(w.path) == [
        {"timestamp": 5, "a0": "A", "a1": 0.25},
        {"timestamp": 6, "a0": "B", "a1": 1e300},
    ]
