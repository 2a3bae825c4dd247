"""The plan topology built from the XML query plan: components, parallelism, groupings."""

import logging

from manager.topology_builder import build_topology
from tests.manager.manager_plans import STAT_XML
from topology.routing import build_routes


def build():
    return build_topology(STAT_XML, -1234, "StatExecutionPlan", "tcp://127.0.0.1:8904", "127.0.0.1")


def test_components_follow_the_xml(caplog):
    with caplog.at_level(logging.DEBUG, logger="manager.topology_manager"):
        topo = build()
    assert topo.name == "StatExecutionPlan[-1234]"
    assert {c.id: (c.kind, c.parallelism) for c in topo.components.values()} == {
        "EventReceiverSpout": ("spout", 2),
        "1": ("bolt", 4),
        "2": ("bolt", 2),
        "query4": ("bolt", 3),
        "EventPublisherBolt": ("bolt", 3),
    }
    bolt2 = topo.components["2"]
    assert [(i.source, i.stream, i.grouping.kind, i.grouping.fields) for i in bolt2.inputs] == [
        ("1", "validAnalyticsStat", "fields", ("userID",)),
        ("EventReceiverSpout", "_tick", "all", ()),
    ]  # timer output leaves on ticks
    pub = topo.components["EventPublisherBolt"]
    assert [(i.source, i.stream, i.grouping.kind) for i in pub.inputs] == [
        ("query4", "processedStream", "shuffle")
    ]
    assert (
        "Connecting storm components [Consumer:2, Stream:validAnalyticsStat, Publisher:1, "
        "Grouping:FieldGrouping]"
    ) in caplog.text
    assert topo.components["1"].config["table_definitions"].startswith("define table BlockedUsers")
    topo.validate(check_classes=True)


def test_fields_grouping_hashes_the_partition_attribute():
    """CEP 4.0 hashed the column next to the key; here equal userIDs reach the same task
    whatever the other values are, and differing userIDs spread."""
    topo = build()
    route = build_routes(topo, "1")["validAnalyticsStat"][0]
    tasks_by_user = {}
    for i in range(400):
        user = f"u{i % 40}"
        parts, bad = route.split([(i, user, f"terms{i}")])
        assert not bad
        tasks_by_user.setdefault(user, set()).add(parts[0][0])
    assert all(len(t) == 1 for t in tasks_by_user.values())
    assert len({next(iter(t)) for t in tasks_by_user.values()}) == 2


def test_script_functions_reach_every_bolt_and_run_there():
    """A distributed plan's `define function` goes into each group's definitions, so the
    bolt that compiles its group's text can call it; the manager's scripts.* settings go
    along in the component config."""
    import cep
    from cep.bolt import group_plan_text
    from cep.engine.runtime import ExecutionPlanRuntime
    from manager.queryplan.builder import query_plan_xml

    plan = cep.compile("""@Plan:name('Js')
define function up[JavaScript] return string { return data[0].toUpperCase(); };
@Import('S:1.0.0')
define stream S (k string);
@Export('Out:1.0.0')
define stream Out (u string);
@info(name='q') from S select up(k) as u insert into Out;
""")
    topo = build_topology(
        query_plan_xml(plan),
        -1234,
        "Js",
        "tcp://127.0.0.1:8904",
        "127.0.0.1",
        extra={"scripts": {"python": False}},
    )
    (bolt,) = [c for c in topo.components.values() if "queries" in c.config]
    assert bolt.config["scripts"] == {"python": False}
    rt = ExecutionPlanRuntime(cep.compile(group_plan_text(bolt.config)), playback=True)
    out = []
    rt.add_callback("Out", out.extend)
    rt.input_handler("S").send(("abc",), 1)
    assert out == [(1, ("ABC",))]
    rt.shutdown()
