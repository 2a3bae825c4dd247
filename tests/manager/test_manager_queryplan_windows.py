"""Named windows in distributed mode: the execution group that holds a window holds every
query that reads or writes it; the XML query plan says where (`window-definitions` of that
event-processor, in conf/query-plan.xsd); a split across groups or parallel > 1 is refused
with the position of the offending element; the bolt runs the window from its config."""

import pytest
from lxml import etree

import cep
from cep.bolt import group_plan_text
from manager.exceptions import DistributionError, QueryPlanError
from manager.queryplan import query_plan_xml, read_query_plan, validate_query_plan
from manager.topology_builder import build_topology

HEAD = """@Plan:name('W')
@Import('Src:1.0.0')
define stream Src (k string, i int);
@Export('Out:1.0.0')
define stream Out (k string, s long);
define window W (k string, i int) length(2) output all events;
"""


def plan_xml(body):
    return query_plan_xml(cep.compile(HEAD + body))


def test_window_users_without_exec_group_join_the_windows_group():
    xml = plan_xml(
        "from Src select k, i insert into W;\nfrom W select k, sum(i) as s insert into Out;"
    )
    qp = read_query_plan(xml)
    (p,) = qp.processors  # the reader joined the writer's group
    assert p.window_definitions == "define window W (k string, i int) length(2) output all events;"
    assert [s.id for s in p.inputs] == ["Src"] and [s.id for s in p.outputs] == ["Out"]
    assert "W" not in {s.id for s in qp.imported + qp.exported}
    root = etree.fromstring(xml)
    assert root.find("event-processor/window-definitions") is not None


def test_the_group_holding_a_window_also_runs_other_queries_beside_it():
    xml = plan_xml(
        "@dist(execGroup='g') from Src select k, i insert into W;\n"
        "@dist(execGroup='g') from W select k, sum(i) as s insert into Mid;\n"
        "@dist(execGroup='h') from Mid select k, s insert into Out;"
    )
    qp = read_query_plan(xml)
    assert [(p.name, bool(p.window_definitions)) for p in qp.processors] == [
        ("g", True),
        ("h", False),
    ]
    assert [s.id for s in qp.processors[1].inputs] == ["Mid"]


def test_readers_in_another_exec_group_are_refused_with_their_position():
    with pytest.raises(DistributionError) as info:
        plan_xml(
            "@dist(execGroup='g') from Src select k, i insert into W;\n"
            "@dist(execGroup='h') from W select k, sum(i) as s insert into Out;"
        )
    assert "named window 'W' is held by execution group 'g'" in str(info.value)
    assert info.value.span.line == 8


def test_a_windows_group_with_parallel_above_one_is_refused():
    with pytest.raises(DistributionError) as info:
        plan_xml(
            "@dist(execGroup='g', parallel='2') from Src select k, i insert into W;\n"
            "@dist(execGroup='g', parallel='2') from W select k, sum(i) as s "
            "insert into Out;"
        )
    assert "parallel 1, not 2" in str(info.value) and info.value.span.line == 7


def test_the_schema_checks_window_definitions():
    root = etree.fromstring(
        plan_xml(
            "from Src select k, i insert into W;\nfrom W select k, sum(i) as s insert into Out;"
        )
    )
    validate_query_plan(root)
    root.find("event-processor/window-definitions").text = "define stream W (k string);"
    with pytest.raises(QueryPlanError, match="window-definitions"):
        validate_query_plan(root)


def test_the_bolt_plan_holds_the_window_and_runs_it():
    xml = plan_xml(
        "from Src select k, i insert into W;\nfrom W select k, sum(i) as s insert into Out;"
    )
    topo = build_topology(xml, -1234, "W", "tcp://127.0.0.1:8904", "127.0.0.1", playback=True)
    (bolt,) = [c for c in topo.components.values() if c.config.get("queries")]
    text = group_plan_text(bolt.config)
    from cep.engine.runtime import ExecutionPlanRuntime

    rt = ExecutionPlanRuntime(cep.compile(text))
    got = []
    rt.add_callback("Out", got.extend)
    for ts, row in [(1000, ("a", 1)), (1100, ("b", 2)), (1200, ("c", 4))]:
        rt.input_handler("Src").send(row, ts)
    rt.shutdown()
    assert [r for _, r in got] == [("a", 1), ("b", 3), ("c", 6)]
