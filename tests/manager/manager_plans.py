"""Execution plans for the manager tests: SiddhiQL text, and the same plans as hand-built models
(so the query plan tests do not depend on the compiler)."""

from cep.model import (
    Annotation,
    Attribute,
    AttrType,
    CompareOp,
    Constant,
    ExecutionPlan,
    Filter,
    InsertInto,
    OutputAttribute,
    Partition,
    Query,
    Selector,
    SingleInputStream,
    StreamDefinition,
    TableDefinition,
    ValuePartitionKey,
    Variable,
    Window,
    TimeConstant,
)

S, L, D = AttrType.STRING, AttrType.LONG, AttrType.DOUBLE

# CEP 4.0 sample 0504's shape: three groups (two execGroups and a named query), a partition,
# @Plan:dist for both parallelisms, an intermediate stream pruned inside group '1', a table.
STAT_PLAN = """@Plan:name('StatExecutionPlan')
@Plan:dist(receiverParallelism='2')
@Plan:dist(publisherParallelism='3')

@Import('analyticsStats:1.0.0')
define stream analyticsStats (ipAdd string, userID string, searchTerms string);

@Export('processedStream:1.0.0')
define stream processedStream (userID string, total long);

define table BlockedUsers (userID string);

@name('query1') @dist(parallel='4', execGroup='1')
from analyticsStats[ipAdd != '192.168.1.1']
select ipAdd, userID, searchTerms
insert into filteredAnalyticsStats;

@name('query2') @dist(parallel='4', execGroup='1')
from filteredAnalyticsStats[not((BlockedUsers.userID == userID) in BlockedUsers)]
select userID, searchTerms
insert into validAnalyticsStat;

@dist(parallel='2', execGroup='2')
partition with (userID of validAnalyticsStat)
begin
    @name('query3')
    from validAnalyticsStat#window.time(5 min)
    select userID, count() as total
    insert into processedAnalyticsStats;
end;

@name('query4') @dist(parallel='3')
from processedAnalyticsStats[total > 5]
select userID, total
insert into processedStream;
"""


def ann(name, *positional, namespace=None, **keyed):
    elements = tuple((None, v) for v in positional) + tuple(keyed.items())
    return Annotation(name, namespace, elements)


def stream(sid, attrs, *annotations, table=False):
    cls = TableDefinition if table else StreamDefinition
    return cls(sid, tuple(Attribute(n, t) for n, t in attrs), tuple(annotations))


def _between(text, start, end):
    """The exact source of an element: from `start` through the text before `end`."""
    i = text.index(start)
    return text[i : text.index(end, i)].strip()


def query(src, target, attrs, text, *annotations, window=None, filt=None):
    handlers = ((Filter(filt),) if filt is not None else ()) + ((window,) if window else ())
    sel = Selector(tuple(OutputAttribute(a, Variable(a)) for a in attrs))
    return Query(
        SingleInputStream(src, handlers),
        sel,
        InsertInto(target),
        annotations=tuple(annotations),
        text=text,
    )


def stat_plan_model():
    """STAT_PLAN as the compiler would build it."""
    t = STAT_PLAN
    q1 = query(
        "analyticsStats",
        "filteredAnalyticsStats",
        ["ipAdd", "userID", "searchTerms"],
        _between(t, "@name('query1')", ";"),
        ann("name", "query1"),
        ann("dist", parallel="4", execGroup="1"),
        filt=CompareOp("!=", Variable("ipAdd"), Constant("192.168.1.1", S)),
    )
    from cep.model import InTable, Not

    q2 = query(
        "filteredAnalyticsStats",
        "validAnalyticsStat",
        ["userID", "searchTerms"],
        _between(t, "@name('query2')", ";"),
        ann("name", "query2"),
        ann("dist", parallel="4", execGroup="1"),
        filt=Not(
            InTable(
                CompareOp("==", Variable("userID", "BlockedUsers"), Variable("userID")),
                "BlockedUsers",
            )
        ),
    )
    q3 = query(
        "validAnalyticsStat",
        "processedAnalyticsStats",
        ["userID"],
        _between(t, "@name('query3')", ";"),
        ann("name", "query3"),
        window=Window("time", (TimeConstant(300000),)),
    )
    part = Partition(
        (ValuePartitionKey("validAnalyticsStat", Variable("userID")),),
        (q3,),
        (ann("dist", parallel="2", execGroup="2"),),
        text=_between(t, "@dist(parallel='2', execGroup='2')", "\n\n@name('query4')").rstrip(";"),
    )
    q4 = query(
        "processedAnalyticsStats",
        "processedStream",
        ["userID", "total"],
        _between(t, "@name('query4')", ";"),
        ann("name", "query4"),
        ann("dist", parallel="3"),
        filt=CompareOp(">", Variable("total"), Constant(5, L)),
    )
    streams = (
        stream(
            "analyticsStats",
            [("ipAdd", S), ("userID", S), ("searchTerms", S)],
            ann("Import", "analyticsStats:1.0.0"),
        ),
        stream(
            "processedStream", [("userID", S), ("total", L)], ann("Export", "processedStream:1.0.0")
        ),
        stream("filteredAnalyticsStats", [("ipAdd", S), ("userID", S), ("searchTerms", S)]),
        stream("validAnalyticsStat", [("userID", S), ("searchTerms", S)]),
        stream("processedAnalyticsStats", [("userID", S), ("total", L)]),
    )
    table = TableDefinition(
        "BlockedUsers", (Attribute("userID", S),), text="define table BlockedUsers (userID string)"
    )
    plan_anns = (
        ann("name", "StatExecutionPlan", namespace="Plan"),
        ann("dist", namespace="Plan", receiverParallelism="2"),
        ann("dist", namespace="Plan", publisherParallelism="3"),
    )
    return ExecutionPlan(
        plan_anns,
        streams,
        (table,),
        (),
        (q1, q2, part, q4),
        frozenset({"filteredAnalyticsStats", "validAnalyticsStat", "processedAnalyticsStats"}),
        source=t,
    )


STAT_XML = """<storm-query-plan>
  <event-receiver name="EventReceiverSpout" parallel="2">
    <streams>
      <stream>define stream analyticsStats ( ipAdd string, userID string, searchTerms string );</stream>
    </streams>
  </event-receiver>
  <event-processor name="1" parallel="4" enforceParallel="false">
    <table-definitions>define table BlockedUsers (userID string);</table-definitions>
    <input-streams>
      <stream>define stream analyticsStats ( ipAdd string, userID string, searchTerms string );</stream>
    </input-streams>
    <queries>@name('query1') @dist(parallel='4', execGroup='1')
from analyticsStats[ipAdd != '192.168.1.1']
select ipAdd, userID, searchTerms
insert into filteredAnalyticsStats;
@name('query2') @dist(parallel='4', execGroup='1')
from filteredAnalyticsStats[not((BlockedUsers.userID == userID) in BlockedUsers)]
select userID, searchTerms
insert into validAnalyticsStat;</queries>
    <output-streams>
      <stream>define stream validAnalyticsStat ( userID string, searchTerms string );</stream>
    </output-streams>
  </event-processor>
  <event-processor name="2" parallel="2" enforceParallel="false">
    <table-definitions></table-definitions>
    <input-streams>
      <stream partition="userID">define stream validAnalyticsStat ( userID string, searchTerms string );</stream>
    </input-streams>
    <queries>@dist(parallel='2', execGroup='2')
partition with (userID of validAnalyticsStat)
begin
    @name('query3')
    from validAnalyticsStat#window.time(5 min)
    select userID, count() as total
    insert into processedAnalyticsStats;
end;</queries>
    <output-streams>
      <stream>define stream processedAnalyticsStats ( userID string, total long );</stream>
    </output-streams>
  </event-processor>
  <event-processor name="query4" parallel="3" enforceParallel="false">
    <table-definitions></table-definitions>
    <input-streams>
      <stream>define stream processedAnalyticsStats ( userID string, total long );</stream>
    </input-streams>
    <queries>@name('query4') @dist(parallel='3')
from processedAnalyticsStats[total &gt; 5]
select userID, total
insert into processedStream;</queries>
    <output-streams>
      <stream>define stream processedStream ( userID string, total long );</stream>
    </output-streams>
  </event-processor>
  <event-publisher name="EventPublisherBolt" parallel="3">
    <input-streams>
      <stream>define stream processedStream ( userID string, total long );</stream>
    </input-streams>
    <output-streams>
      <stream>define stream processedStream ( userID string, total long );</stream>
    </output-streams>
  </event-publisher>
</storm-query-plan>
"""
