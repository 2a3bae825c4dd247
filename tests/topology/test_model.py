"""Topology model: building, validation errors, serialisation, drawing."""

import json

import pytest

from topology.exceptions import (
    BadGroupingError,
    BadParallelismError,
    ComponentClassError,
    CycleError,
    DanglingInputError,
    DuplicateComponentError,
    NoSpoutError,
    TopologyValidationError,
    UnknownFieldError,
    UnknownStreamError,
)
from topology.model import Grouping, Topology
from topology.testing import CountBolt, ListSpout, SplitBolt


def word_count(par=2):
    t = Topology("WordCount[-1234]", {"note": "x"})
    t.add_spout("sentences", ListSpout, outputs=["sentence"], config={"rows": [["a b"]]})
    t.add_bolt(
        "split", SplitBolt, inputs={"sentences": "shuffle"}, parallelism=par, outputs=["word"]
    )
    t.add_bolt(
        "count",
        "topology.testing:CountBolt",
        inputs={"split": Grouping.by_fields("word")},
        parallelism=par,
    )
    return t


def test_valid_topology_validates_and_orders_tasks():
    t = word_count().validate()
    assert t.tasks() == [("split", 0), ("split", 1), ("count", 0), ("count", 1), ("sentences", 0)]
    assert t.task_ids() == {"split": [0, 1], "count": [2, 3], "sentences": [4]}
    assert t.total_parallelism == 5


def test_no_spout_is_rejected():
    t = Topology("t")
    t.add_bolt("b", SplitBolt, inputs={"x": "shuffle"})
    with pytest.raises(NoSpoutError, match="no spout"):
        t.validate()


def test_dangling_input_names_bolt_and_source():
    t = word_count()
    t.add_bolt("sink", CountBolt, inputs={"nowhere": "shuffle"})
    with pytest.raises(DanglingInputError) as info:
        t.validate()
    assert info.value.component == "sink" and info.value.value == "nowhere"
    assert "'sink'" in str(info.value) and "'nowhere'" in str(info.value)


def test_fields_grouping_on_unknown_field():
    t = word_count()
    t.add_bolt("bad", CountBolt, inputs={"split": ["colour"]})
    with pytest.raises(UnknownFieldError, match="'colour'") as info:
        t.validate()
    assert info.value.component == "bad"


def test_unknown_stream():
    t = word_count()
    t.add_bolt("bad", CountBolt, inputs={("split", "errors"): "shuffle"})
    with pytest.raises(UnknownStreamError, match="'errors'"):
        t.validate()


@pytest.mark.parametrize("par", [0, -1, 1.5, "2", True])
def test_bad_parallelism_names_component_and_value(par):
    t = Topology("t")
    with pytest.raises(BadParallelismError) as info:
        t.add_spout("s", ListSpout, parallelism=par, outputs=["x"])
    assert info.value.component == "s" and info.value.value == par and repr(par) in str(info.value)


def test_duplicate_ids():
    t = word_count()
    with pytest.raises(DuplicateComponentError, match="'split'"):
        t.add_bolt("split", SplitBolt, inputs={"sentences": "shuffle"})


def test_cycle_is_reported_with_path():
    t = Topology("t")
    t.add_spout("s", ListSpout, outputs=["x"])
    t.add_bolt("a", CountBolt, inputs={"s": "shuffle", "b": "shuffle"}, outputs=["x"])
    t.add_bolt("b", CountBolt, inputs={"a": "shuffle"}, outputs=["x"])
    with pytest.raises(CycleError, match="a -> b -> a|b -> a -> b"):
        t.validate()


@pytest.mark.parametrize("grouping", ["random", 5, Grouping("fields"), Grouping("shuffle", ("x",))])
def test_bad_grouping(grouping):
    t = word_count()
    with pytest.raises(BadGroupingError):
        t.add_bolt("x", CountBolt, inputs={"split": grouping})


def test_bad_class_path_and_wrong_base_class():
    t = word_count()
    t.add_bolt("x", "topology.testing:NoSuchBolt", inputs={"split": "all"})
    with pytest.raises(ComponentClassError, match="NoSuchBolt"):
        t.validate()
    t2 = Topology("t")
    t2.add_spout("s", SplitBolt, outputs=["x"])
    with pytest.raises(ComponentClassError, match="not a Spout subclass"):
        t2.validate()


def test_local_classes_are_rejected_for_spark_only():
    class LocalSpout(ListSpout):
        pass

    t = Topology("t")
    t.add_spout("s", LocalSpout, outputs=["x"])
    t.validate()
    with pytest.raises(ComponentClassError, match="cannot be imported by Spark"):
        t.validate(for_spark=True)


def test_all_validation_errors_share_root():
    assert issubclass(CycleError, TopologyValidationError)
    assert issubclass(TopologyValidationError, ValueError)


def test_dict_and_json_round_trip():
    t = word_count()
    data = json.loads(t.to_json())
    assert data["name"] == "WordCount[-1234]"
    count = [c for c in data["components"] if c["id"] == "count"][0]
    assert count["inputs"] == [
        {"source": "split", "stream": "default", "grouping": {"kind": "fields", "fields": ["word"]}}
    ]
    assert count["class"] == "topology.testing:CountBolt"
    again = Topology.from_json(json.dumps(data))
    assert again.to_dict() == t.to_dict()
    again.validate()


def test_mermaid_draws_nodes_and_grouped_edges():
    text = word_count().to_mermaid()
    assert text.startswith("flowchart LR\n")
    assert 'c_sentences(["sentences x1"])' in text
    assert 'c_split -->|"fields(word)"| c_count' in text
    assert 'c_sentences -->|"shuffle"| c_split' in text
