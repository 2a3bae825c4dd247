"""Spans: every node's span covers exactly its source text, across lines."""

import cep

TEXT = """@Plan:name('Spans')
define stream A (id int, sym string, price double);
define table T (sym string, price double);
@info(name = 'first')
from A[price > 10.0]#window.length(5)
select sym, avg(price) as ap
group by sym
insert into Out;
from every e1=A -> e2=A[price > e1.price] within 1 sec
select e1.sym as s insert into P;
partition with (sym of A)
begin
  from A#window.length(2) as x join T on x.sym == T.sym select x.id as i insert into #J;
  from #J select i insert into Q;
end;
"""


def src(node):
    return TEXT[node.span.start_pos : node.span.end_pos]


def test_node_spans_cover_their_text():
    plan = cep.compile(TEXT)
    first, pattern = plan.queries
    flt, window = first.input.handlers
    assert src(flt) == "[price > 10.0]" and src(flt.expression) == "price > 10.0"
    assert src(window) == "#window.length(5)"
    ap = first.selector.attributes[1]
    assert src(ap) == "avg(price) as ap" and src(ap.expression) == "avg(price)"
    assert src(first.selector) == "select sym, avg(price) as ap\ngroup by sym"
    assert src(first.output) == "insert into Out"
    assert src(plan.stream("A")) == "define stream A (id int, sym string, price double)"
    assert src(plan.stream("A").attributes[2]) == "price double"
    assert src(pattern.input) == "every e1=A -> e2=A[price > e1.price] within 1 sec"
    assert src(pattern.input.state.then) == "e2=A[price > e1.price]"
    (partition,) = plan.partitions
    assert src(partition.keys[0]) == "sym of A"
    join = partition.queries[0].input
    assert src(join.left) == "A#window.length(2) as x" and src(join.on) == "x.sym == T.sym"
    assert src(partition) == partition.text and partition.text.endswith("end")


def test_spans_agree_with_line_and_column():
    plan = cep.compile(TEXT)
    lines = TEXT.splitlines(keepends=True)
    for node in (plan.queries[0], plan.queries[1].input, plan.partitions[0]):
        s = node.span
        assert sum(len(x) for x in lines[: s.line - 1]) + s.column - 1 == s.start_pos
        assert sum(len(x) for x in lines[: s.end_line - 1]) + s.end_column - 1 == s.end_pos
    assert plan.queries[0].span.line == 4  # the annotation starts the query
