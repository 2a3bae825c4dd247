"""The XML query plan: CEP 4.0's shape, exact text, schema, rules of distributed mode."""

import logging

import pytest
from lxml import etree

from cep.model import Partition, RangeCondition, RangePartitionKey
from manager.exceptions import DistributionError, QueryPlanError
from manager.queryplan import query_plan_xml, read_query_plan, validate_query_plan
from tests.manager.manager_plans import STAT_XML, ann, query, stat_plan_model, stream, S


def test_stat_plan_xml_is_exactly_as_expected():
    assert query_plan_xml(stat_plan_model()) == STAT_XML


def test_expected_xml_is_schema_valid_and_reads_back():
    validate_query_plan(STAT_XML)
    qp = read_query_plan(STAT_XML)
    assert (qp.receiver_parallel, qp.publisher_parallel) == (2, 3)
    assert [(p.name, p.parallel) for p in qp.processors] == [("1", 4), ("2", 2), ("query4", 3)]
    assert qp.processors[1].inputs[0].partition == "userID"
    assert [s.id for s in qp.exported] == ["processedStream"]


@pytest.mark.parametrize(
    "mutate,message",
    [
        (lambda r: r.remove(r.find("event-publisher")), "event-publisher"),
        (lambda r: r.find("event-processor").set("parallel", "0"), "parallel"),
        (lambda r: r.find("event-processor").set("name", "has space"), "name"),
        (
            lambda r: r.find("event-receiver/streams/stream").__setattr__("text", "stream x"),
            "stream",
        ),
        (
            lambda r: r.find("event-publisher/input-streams/stream").__setattr__(
                "text", "define stream nowhere ( a int );"
            ),
            "not produced by any bolt/spout",
        ),
    ],
)
def test_invalid_query_plans_are_rejected(mutate, message):
    root = etree.fromstring(STAT_XML)
    mutate(root)
    with pytest.raises(QueryPlanError, match=message):
        validate_query_plan(root)


def _plan(elements, streams=None):
    from cep.model import ExecutionPlan

    streams = streams or (
        stream("In", [("k", S)], ann("Import", "In:1.0.0")),
        stream("Out", [("k", S)], ann("Export", "Out:1.0.0")),
    )
    return ExecutionPlan((ann("name", "P", namespace="Plan"),), streams, (), (), tuple(elements))


def test_window_outside_partition_held_to_parallel_one_with_warning(caplog):
    from cep.model import Window, TimeConstant

    q = query(
        "In",
        "Out",
        ["k"],
        "@dist(parallel='3') from In#window.time(1 sec) select k insert into Out",
        ann("name", "w"),
        ann("dist", parallel="3"),
        window=Window("time", (TimeConstant(1000),)),
    )
    with caplog.at_level(logging.WARNING, logger="manager.topology_manager"):
        qp = read_query_plan(query_plan_xml(_plan([q])))
    assert (qp.processors[0].parallel, qp.processors[0].enforce) == (1, True)
    assert "run with parallel 1 (requested 3)" in caplog.text


def test_window_inside_partition_keeps_parallelism():
    from cep.model import ValuePartitionKey, Variable, Window, TimeConstant

    inner = query(
        "In",
        "Out",
        ["k"],
        "from In#window.length(5) select k insert into Out",
        window=Window("length", (TimeConstant(5),)),
    )
    part = Partition(
        (ValuePartitionKey("In", Variable("k")),),
        (inner,),
        (ann("dist", parallel="4"), ann("name", "byKey")),
        text="@name('byKey') @dist(parallel='4') partition with (k of In) begin from In#window.length(5) select k insert into Out; end",
    )
    proc = read_query_plan(query_plan_xml(_plan([part]))).processors[0]
    assert (proc.name, proc.parallel, proc.enforce, proc.inputs[0].partition) == (
        "byKey",
        4,
        False,
        "k",
    )


@pytest.mark.parametrize(
    "elements,message",
    [
        ([query("In", "Out", ["k"], "x", ann("name", "a b"))], "must not contain spaces"),
        (
            [
                query("In", "Mid", ["k"], "x", ann("dist", parallel="2", execGroup="g")),
                query("Mid", "Out", ["k"], "y", ann("dist", parallel="3", execGroup="g")),
            ],
            "should be same",
        ),
        ([query("Nowhere", "Out", ["k"], "x")], "not produced by any bolt/spout"),
        ([query("In", "Other", ["k"], "x")], "Event publisher bolt"),
    ],
)
def test_distribution_rules(elements, message):
    with pytest.raises(DistributionError, match=message):
        query_plan_xml(_plan(elements))


def test_range_partition_rejected_with_position():
    from cep.model import Span, Variable, Constant, CompareOp

    key = RangePartitionKey(
        "In",
        (RangeCondition(CompareOp("==", Variable("k"), Constant("a", S)), "a"),),
        span=Span(9, 16, 9, 40),
    )
    part = Partition((key,), (query("In", "Out", ["k"], "x"),), text="partition ...")
    with pytest.raises(DistributionError, match="Range partitioning") as err:
        query_plan_xml(_plan([part]))
    assert err.value.to_dict()["line"] == 9 and err.value.to_dict()["column"] == 16


def test_compiled_stat_plan_gives_the_same_xml():
    import cep
    from tests.manager.manager_plans import STAT_PLAN

    assert query_plan_xml(cep.compile(STAT_PLAN)) == STAT_XML
