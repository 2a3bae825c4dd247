"""The multi-stream language: joins, tables, patterns, sequences, partitions, triggers."""

import pytest

import cep
from cep.errors import (
    DuplicateDefinitionError,
    InvalidQueryError,
    SiddhiQLSyntaxError,
    TypeMismatchError,
    UnknownAttributeError,
    UnknownStreamError,
)
from cep.model import (
    AbsentState,
    AttrType,
    CountState,
    EveryState,
    InTable,
    IsNullStream,
    JoinInputStream,
    LogicalState,
    NextState,
    RangePartitionKey,
    StateInputStream,
    StreamState,
    UpdateOrInsert,
    UpdateTable,
    ValuePartitionKey,
    Variable,
)

DEFS = (
    "define stream A (id int, sym string, price double);\n"
    "define stream B (id int, sym string, price double);\n"
    "define stream C (id int, sym string, price double);\n"
    "define table T (sym string, price double);\n"
)


def query(body, defs=DEFS):
    return cep.compile(defs + body).queries[0]


def reject(body, error_class, defs=DEFS):
    with pytest.raises(error_class) as info:
        cep.compile(defs + body)
    return info.value


# -- joins --
@pytest.mark.parametrize(
    "words,join_type",
    [
        ("join", "inner"),
        ("inner join", "inner"),
        ("left outer join", "left_outer"),
        ("right outer join", "right_outer"),
        ("full outer join", "full_outer"),
    ],
)
def test_join_types(words, join_type):
    q = query(
        f"from A#window.length(2) {words} B#window.length(2) on A.sym == B.sym "
        f"select A.id as a, B.id as b insert into Out;"
    )
    assert isinstance(q.input, JoinInputStream) and q.input.join_type == join_type
    assert q.input.left.window.name == "length" and q.input.on.op == "=="


def test_join_unidirectional_aliases_within():
    q = query(
        "from A#window.time(1 min) as x unidirectional join A#window.length(5) as y "
        "on x.sym == y.sym within 2 sec select x.id as i, y.id as j insert into Out;"
    )
    j = q.input
    assert j.unidirectional == "left" and j.within_millis == 2000
    assert (j.left.alias, j.right.alias) == ("x", "y")
    q = query("from A join B#window.length(1) unidirectional select A.id as i insert into O;")
    assert q.input.unidirectional == "right"


def test_join_output_types_and_select_star():
    plan = cep.compile(
        DEFS + "from A#window.length(2) join B#window.length(2) "
        "on A.id == B.id select A.price * B.id as p insert into Out;\n"
        "from A join T on A.sym == T.sym select * insert into Out2;"
    )
    assert plan.stream("Out").attributes[0].type is AttrType.DOUBLE
    assert plan.stream("Out2").attribute_names == ("id", "sym", "price", "sym", "price")


def test_join_errors():
    e = reject(
        "from A join Missing on A.id == Missing.id select A.id as i insert into O;",
        UnknownStreamError,
    )
    assert "'Missing'" in e.message
    e = reject(
        "from A#window.length(2) join B#window.length(2) on A.id == B.id select sym insert into O;",
        InvalidQueryError,
    )
    assert "ambiguous" in e.message and "'sym'" in e.message
    reject(
        "from A join A on A.id == A.id select A.id as i insert into O;", DuplicateDefinitionError
    )
    reject("from A join B on A.id == B.sym select A.id as i insert into O;", TypeMismatchError)
    reject("from A join B on A.nope == B.id select A.id as i insert into O;", UnknownAttributeError)


# -- tables --
def test_table_outputs():
    plan = cep.compile(
        DEFS + "from A select sym, price update T on T.sym == sym;\n"
        "from A select sym, price insert overwrite T on T.sym == sym;\n"
        "from A select sym, price update or insert into T "
        "set T.price = price on T.sym == sym;\n"
        "from A select sym, price insert into T;"
    )
    update, overwrite, upsert, insert = plan.queries
    assert isinstance(update.output, UpdateTable) and update.output.target == "T"
    assert isinstance(overwrite.output, UpdateOrInsert)
    ((column, value),) = upsert.output.assignments
    assert column == Variable("price", "T") and value == Variable("price")
    assert insert.output.target == "T" and "T" not in plan.inferred_streams


def test_in_table_condition():
    q = query("from A[not ((sym == T.sym) in T)] select id insert into Out;")
    cond = q.input.handlers[0].expression.operand
    assert isinstance(cond, InTable) and cond.table == "T"


def test_table_errors():
    e = reject("from T select sym insert into Out;", InvalidQueryError)
    assert "'T'" in e.message
    e = reject("from A select id, sym, price insert into T;", DuplicateDefinitionError)
    assert "'T'" in e.message
    reject("from A select price, sym insert into T;", TypeMismatchError)
    reject("from A select sym delete Nope on Nope.sym == sym;", UnknownStreamError)
    reject("from A select sym delete B on B.sym == sym;", UnknownStreamError)
    reject("from A[(sym == X.sym) in X] select id insert into O;", UnknownStreamError)
    reject("from A select sym, id update T on T.sym == sym;", UnknownAttributeError)
    e = reject(
        "from A select sym insert into O;",
        Exception,
        DEFS + "@IndexBy('sym', 'price')\ndefine table U (sym string, price double);\n",
    )
    assert "IndexBy" in e.message


# -- patterns --
def test_pattern_structure():
    q = query(
        "from every e1=A[price > 10.0] -> e2=B[sym == e1.sym] -> e3=C within 10 sec "
        "select e1.id as a, e2.id as b, e3.price - e1.price as d insert into Out;"
    )
    s = q.input
    assert isinstance(s, StateInputStream) and s.kind == "pattern" and s.within_millis == 10000
    assert isinstance(s.state, NextState) and isinstance(s.state.first, NextState)
    every = s.state.first.first
    assert isinstance(every, EveryState) and every.inner.stream.alias == "e1"


def test_pattern_every_group_within_and_counts():
    q = query("from every (e1=A -> e2=B) within 5 sec select e1.id as a insert into Out;")
    assert isinstance(q.input.state, EveryState) and q.input.state.within_millis == 5000
    assert isinstance(q.input.state.inner, NextState)
    for text, bounds in (("<3>", (3, 3)), ("<1:3>", (1, 3)), ("<2:>", (2, None)), ("<:4>", (0, 4))):
        q = query(
            f"from e1=A[price > 1.0]{text} -> e2=B "
            f"select e1[0].id as f, e1[last].id as l, e1[last-1].id as p insert into O;"
        )
        count = q.input.state.first
        assert isinstance(count, CountState) and (count.min_count, count.max_count) == bounds
        indexes = [a.expression.index for a in q.selector.attributes]
        assert indexes == [0, ("last", 0), ("last", 1)]


def test_pattern_logical_absent_and_null_checks():
    q = query("from e1=A -> e2=B or e3=C select e1.id as a, e2 is null as n insert into O;")
    logical = q.input.state.then
    assert isinstance(logical, LogicalState) and logical.op == "or"
    assert q.selector.attributes[1].expression == IsNullStream("e2")
    q = query("from e1=A -> not B[price > e1.price] for 5 sec select e1.id as a insert into O;")
    absent = q.input.state.then
    assert isinstance(absent, AbsentState) and absent.for_millis == 5000
    q = query("from not A and e2=B select e2.id as b insert into O;")
    assert isinstance(q.input.state.left, AbsentState) and q.input.state.op == "and"


def test_pattern_types_flow_to_output():
    plan = cep.compile(
        DEFS + "from every e1=A -> e2=B select e1.sym as s, e2.price - e1.id as d insert into Out;"
    )
    assert [a.type for a in plan.stream("Out").attributes] == [AttrType.STRING, AttrType.DOUBLE]


def test_pattern_errors():
    e = reject(
        "from every e1=A -> e2=B select e1.id as a, e3.id as c insert into O;", UnknownStreamError
    )
    assert "'e3'" in e.message and e.span.line == 5
    reject("from e1=A -> e2=B[e1.nope > 1] select e1.id as a insert into O;", UnknownAttributeError)
    reject("from e1=A -> e1=B select e1.id as a insert into O;", DuplicateDefinitionError)
    reject("from e1=A#window.length(2) -> e2=B select e1.id as a insert into O;", InvalidQueryError)
    reject("from e1=A -> e2=B, e3=C select e1.id as a insert into O;", SiddhiQLSyntaxError)
    reject("from e1=A -> e2=B+ select e1.id as a insert into O;", SiddhiQLSyntaxError)
    reject("from e1=A -> e2=T select e1.id as a insert into O;", InvalidQueryError)
    reject("from e1=A<3:1> -> e2=B select e1.id as a insert into O;", SiddhiQLSyntaxError)


# -- sequences --
def test_sequences():
    q = query(
        "from every e1=A, e2=B[price > e1.price]+, e3=B*, e4=C? within 5 sec "
        "select e1.id as a, e2[last].price as p insert into Out;"
    )
    s = q.input
    assert s.kind == "sequence" and s.within_millis == 5000
    counts = []
    node = s.state
    while isinstance(node, NextState):
        counts.append(node.then)
        node = node.first
    assert [(c.min_count, c.max_count) for c in reversed(counts)] == [(1, None), (0, None), (0, 1)]
    q = query("from every e1=A, e2=B or e3=C select e1.id as a insert into O;")
    assert isinstance(q.input.state.then, LogicalState)
    q = query("from e1=A, e2=B select e1.id as a insert into O;")
    assert isinstance(q.input.state.first, StreamState)


# -- partitions --
def test_value_and_range_partitions_with_inner_streams():
    plan = cep.compile(
        DEFS + "@purge(enable='true', interval='1 min', idle.period='1 hour')\n"
        "partition with (sym of A, price * 2 of B)\nbegin\n"
        "  from A select sym, price insert into #Big;\n"
        "  from #Big#window.length(2) select sym, sum(price) as s "
        "insert into Out;\n"
        "end;\n"
        "partition with (price < 100.0 as 'low' or price >= 100.0 as "
        "'high' of C) begin from C select id insert into Out2; end;"
    )
    first, second = plan.partitions
    k1, k2 = first.keys
    assert isinstance(k1, ValuePartitionKey) and k1.expression == Variable("sym")
    assert k2.stream_id == "B"
    assert [q.input.inner for q in first.queries] == [False, True]
    assert first.inner_stream("Big").attribute_names == ("sym", "price")
    assert "Big" not in plan.inferred_streams and "Out" in plan.inferred_streams
    (rk,) = second.keys
    assert isinstance(rk, RangePartitionKey) and [r.label for r in rk.ranges] == ["low", "high"]
    assert first.text.startswith("@purge(") and first.text.endswith("end")
    assert first.queries[0].text == "from A select sym, price insert into #Big"


def test_partition_errors():
    e = reject(
        "partition with (sym of Ghost) begin from A select sym insert into O; end;",
        UnknownStreamError,
    )
    assert "'Ghost'" in e.message
    reject(
        "partition with (nope of A) begin from A select sym insert into O; end;",
        UnknownAttributeError,
    )
    reject(
        "partition with (sym of T) begin from A select sym insert into O; end;", UnknownStreamError
    )
    reject(
        "partition with (price of A) begin from A select sym insert into O; end;\n"
        "from #X select sym insert into O;",
        UnknownStreamError,
    )
    reject("from A select sym insert into #X;", InvalidQueryError)
    reject(
        "partition with (price as 'x' of A) begin from A select sym insert into O; end;",
        TypeMismatchError,
    )


# -- triggers --
def test_trigger_is_a_stream_input():
    plan = cep.compile(
        "define trigger Boot at 'start';\n"
        "from Boot select triggered_time as t, 'boot' as what insert into Out;"
    )
    assert [a.type for a in plan.stream("Out").attributes] == [AttrType.LONG, AttrType.STRING]
    with pytest.raises(InvalidQueryError):
        cep.compile(
            "define trigger Boot at 'start';\ndefine stream S (t long);\nfrom S insert into Boot;"
        )


def test_aliased_streams_can_still_be_named_by_stream_id_when_unambiguous():
    query(
        "from A#window.length(2) as x join B#window.length(2) as y on A.id == y.id "
        "select x.id as i, B.price as p insert into O;"
    )
    query("from every e1=A -> e2=B[B.price > e1.price] select e2.id as i insert into O;")
    e = reject(
        "from A#window.length(2) as x join A#window.length(2) as y on A.id == y.id "
        "select x.id as i insert into O;",
        InvalidQueryError,
    )
    assert "'A' is ambiguous" in e.message


def test_absent_state_needs_for_unless_anded():
    e = reject("from e1=A -> not B select e1.id as a insert into O;", InvalidQueryError)
    assert "'for <time>'" in e.message
    reject("from not A or e2=B select e2.id as b insert into O;", InvalidQueryError)
    query("from e1=A -> not B for 1 sec select e1.id as a insert into O;")


def test_having_of_a_join_or_pattern_reads_the_input_too():
    """Siddhi evaluates having on the state event: a join's or pattern's having may name an
    input attribute the select does not output; a single-stream query's having may not."""
    join = (
        "from A#window.length(2) as a join T as t on a.sym == t.sym "
        "select a.id as id {having} insert into Out;"
    )
    query(join.format(having="having t.price > 1.0"))  # qualified: the table side
    u_defs = DEFS + "define table U (sym string, cap double);\n"
    query(
        join.replace("T as t", "U as t").format(having="having id > 0 and cap > 1.0"), defs=u_defs
    )  # the output's name, then a name only one side has
    e = reject(join.format(having="having price > 1.0"), InvalidQueryError)
    assert "ambiguous" in e.message  # a bare name the output lacks, on both sides
    query(
        "from every e1=A -> e2=B[sym == e1.sym] select e2.id as id "
        "having e1.price < e2.price insert into Out;"
    )
    e = reject(join.format(having="having volume > 1"), UnknownAttributeError)
    assert "'volume'" in e.message and "the query's output" in e.message
    e = reject(join.format(having="having x.price > 1.0"), UnknownStreamError)
    assert "'x'" in e.message
    e = reject("from A select id having A.price > 1.0 insert into Out;", UnknownStreamError)
    assert "the query's output" in e.message
    e = reject("from A select id having price > 1.0 insert into Out;", UnknownAttributeError)
    assert "the query's output" in e.message
