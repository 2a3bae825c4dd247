"""planner: keyed when every stateful query is inside a partition keyed on input streams; the
single-task reason names the query that forces it."""

import cep
from cep.backtest.planner import plan_mode

STREAMS = (
    "define stream S (sym string, price double, qty int);\n"
    "define stream Q (name string, bid double);\n"
)


def mode(body, inputs=("S", "Q")):
    return plan_mode(cep.compile(STREAMS + body), set(inputs))


def test_partitioned_window_and_pattern_are_keyed_by_each_streams_attribute():
    m = mode(
        "partition with (sym of S, name of Q) begin "
        "from S#window.time(1 min) select sym, sum(price) as total group by sym "
        "insert into T; "
        "from every e1=S -> e2=Q[bid > e1.price] select e1.sym as sym insert into P; end;"
    )
    assert m.keyed and m.keys == {"S": "sym", "Q": "name"}


def test_stateless_queries_outside_partitions_stay_keyed():
    m = mode(
        "from S[price > 10] select sym, price insert into Hi;"
        "partition with (sym of S) begin from S#window.length(3) select sym, "
        "avg(price) as a insert into A; end;"
    )
    assert m.keyed


def test_unpartitioned_window_query_forces_single_task_and_is_named():
    m = mode("@info(name='avgAll') from S#window.length(5) select avg(price) as a insert into A;")
    assert not m.keyed and "query 'avgAll'" in m.reason and "not inside a partition" in m.reason


def test_unnamed_aggregate_is_named_by_its_text():
    m = mode("from S select sum(qty) as total insert into A;")
    assert not m.keyed and "query 1 (from S select sum(qty) as total insert into A" in m.reason


def test_join_outside_partition_forces_single_task():
    m = mode(
        "from S#window.length(2) join Q#window.length(2) on S.sym == Q.name "
        "select S.sym as sym, Q.bid as bid insert into J;"
    )
    assert not m.keyed and "query 1" in m.reason


def test_range_partition_and_unkeyed_stream_inside_force_single_task():
    m = mode(
        "partition with (price < 100 as 'low' or price >= 100 as 'high' of S) begin "
        "from S#window.length(2) select sum(qty) as q insert into R; end;"
    )
    assert not m.keyed and "range partition" in m.reason
    m = mode(
        "partition with (sym of S) begin @info(name='mix') from S#window.length(2) join "
        "Q#window.length(2) on S.sym == Q.name select S.sym as sym insert into J; end;"
    )
    assert not m.keyed and "query 'mix'" in m.reason and "reads Q" in m.reason


def test_partition_on_a_derived_stream_forces_single_task():
    m = mode(
        "from S[price > 1] select sym, price insert into D; "
        "partition with (sym of D) begin from D#window.length(2) select sym, "
        "sum(price) as p insert into E; end;"
    )
    assert not m.keyed and "stream D, which no input feeds" in m.reason
