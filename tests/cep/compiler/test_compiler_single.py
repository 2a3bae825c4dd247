"""The single-stream language: definitions, filters, windows, selectors, outputs, rate limits."""

import pytest

import cep
from cep.model import (
    AttrType,
    BinaryOp,
    CompareOp,
    Constant,
    DeleteFrom,
    Filter,
    FunctionCall,
    InsertInto,
    Not,
    SingleInputStream,
    StreamFunction,
    TimeConstant,
    Variable,
    Window,
)

TICKS = "define stream Ticks (sym string, price double, vol long, n int, f float, ok bool);\n"


def query_of(body, defs=TICKS):
    return cep.compile(defs + body).queries[0]


def test_stream_table_trigger_definitions():
    plan = cep.compile(
        "define stream S (a string, b int, c long, d float, e double, f bool, g object);\n"
        "define table T (k string, v double);\n"
        "define trigger Boot at 'start';\n"
        "define trigger Every5 at every 5 sec;\n"
        "define trigger Cron at '*/5 * * * * ?';\n"
    )
    s = plan.stream("S")
    assert [a.type.value for a in s.attributes] == [
        "string",
        "int",
        "long",
        "float",
        "double",
        "bool",
        "object",
    ]
    assert plan.table("T").attribute_names == ("k", "v")
    boot, every5, cron = plan.triggers
    assert boot.at_start and every5.every_millis == 5000 and cron.cron == "*/5 * * * * ?"
    assert plan.stream("Every5").attributes[0].type is AttrType.LONG


def test_keywords_case_insensitive_and_names_backquoted():
    plan = cep.compile(
        "DEFINE STREAM `my stream` (Price DOUBLE);\n"
        "FROM `my stream`[Price > 1.0] SELECT Price INSERT INTO Out;"
    )
    q = plan.queries[0]
    assert q.input.stream_id == "my stream"
    assert plan.stream("Out").attributes[0].type is AttrType.DOUBLE


def test_comments_are_ignored():
    plan = cep.compile(
        "-- a comment\n// another\n/* block\ncomment */\n"
        + TICKS
        + "from Ticks select sym insert into Out; -- trailing"
    )
    assert len(plan.queries) == 1


def test_filter_window_and_stream_function_in_source_order():
    q = query_of(
        "from Ticks[price > 10.0]#window.length(5)#log('x')[vol > 2] select sym insert into Out;"
    )
    kinds = [type(h) for h in q.input.handlers]
    assert kinds == [Filter, Window, StreamFunction, Filter]
    window = q.input.window
    assert window.name == "length" and window.params == (Constant(5, AttrType.INT),)


def test_time_constants_combine_and_cover_all_units():
    q = query_of("from Ticks#window.time(1 min 30 sec) select sym insert into Out;")
    assert q.input.window.params[0].millis == 90_000
    units = {
        "2 millisec": 2,
        "3 ms": 3,
        "1 second": 1000,
        "2 minutes": 120_000,
        "1 hour": 3_600_000,
        "2 days": 172_800_000,
        "1 week": 604_800_000,
        "1 month": 2_592_000_000,
        "1 year": 31_536_000_000,
    }
    for text, millis in units.items():
        q = query_of(f"from Ticks#window.time({text}) select sym insert into Out;")
        assert q.input.window.params[0] == TimeConstant(millis), text


@pytest.mark.parametrize(
    "literal,value,attr_type",
    [
        ("7", 7, AttrType.INT),
        ("100L", 100, AttrType.LONG),
        ("1.5f", 1.5, AttrType.FLOAT),
        ("0.1f", 0.10000000149011612, AttrType.FLOAT),
        ("1.5", 1.5, AttrType.DOUBLE),
        ("1.5d", 1.5, AttrType.DOUBLE),
        ("1e3", 1000.0, AttrType.DOUBLE),
        ("'it''s'", None, None),
        ('"dq"', "dq", AttrType.STRING),
        ("'sq'", "sq", AttrType.STRING),
        ("true", True, AttrType.BOOL),
        ("FALSE", False, AttrType.BOOL),
        ("-5", -5, AttrType.INT),
        ("'''tri'ple'''", "tri'ple", AttrType.STRING),
    ],
)
def test_literals(literal, value, attr_type):
    if attr_type is None:
        with pytest.raises(cep.SiddhiQLError):
            query_of(f"from Ticks select {literal} as c insert into Out;")
        return
    q = query_of(f"from Ticks select {literal} as c insert into Out;")
    constant = q.selector.attributes[0].expression
    assert constant == Constant(value, attr_type)


def test_operator_precedence_and_not_binding():
    q = query_of(
        "from Ticks[not ok == true and price > 1.0 + 2.0 * 3.0] select sym insert into Out;"
    )
    cond = q.input.handlers[0].expression
    left, right = cond.left, cond.right
    assert isinstance(left, CompareOp) and isinstance(left.left, Not)
    assert isinstance(right.right, BinaryOp) and right.right.op == "+"
    assert right.right.right.op == "*"


def test_select_star_aliases_and_default_names():
    q = query_of("from Ticks select * insert into Out;")
    assert q.selector.select_all
    q = query_of("from Ticks insert into Out;")
    assert q.selector.select_all
    q = query_of("from Ticks select price as p, sym, 'x' as k insert into Out;")
    assert [a.rename for a in q.selector.attributes] == ["p", "sym", "k"]


def test_group_by_having_order_by_limit():
    q = query_of(
        "from Ticks#window.lengthBatch(4) select sym, sum(vol) as t group by sym "
        "having t > 10L order by t desc, sym limit 3 insert into Out;"
    )
    sel = q.selector
    assert sel.group_by == (Variable("sym"),)
    assert isinstance(sel.having, CompareOp)
    assert [(o.variable.name, o.ascending) for o in sel.order_by] == [("t", False), ("sym", True)]
    assert sel.limit == 3


@pytest.mark.parametrize(
    "clause,kind,value,mode",
    [
        ("output every 3 events", "events", 3, "all"),
        ("output first every 2 events", "events", 2, "first"),
        ("output last every 1 min", "time", 60_000, "last"),
        ("output all every 5 sec", "time", 5000, "all"),
        ("output snapshot every 2 sec", "snapshot", 2000, "all"),
    ],
)
def test_output_rate(clause, kind, value, mode):
    q = query_of(f"from Ticks select sym {clause} insert into Out;")
    assert (q.rate.kind, q.rate.value, q.rate.mode) == (kind, value, mode)


@pytest.mark.parametrize(
    "words,event_type",
    [
        ("insert into", "current"),
        ("insert current events into", "current"),
        ("insert expired events into", "expired"),
        ("insert all events into", "all"),
    ],
)
def test_insert_event_types(words, event_type):
    q = query_of(f"from Ticks#window.length(2) select sym {words} Out;")
    assert q.output == InsertInto("Out", event_type)


def test_functions_with_namespace_are_parsed_and_an_unknown_one_is_rejected():
    query_of("from Ticks select str:concat(sym, 'x') as c insert into Out;")
    with pytest.raises(cep.SiddhiQLError) as info:
        query_of("from Ticks select str:concatx(sym, 'x') as c insert into Out;")
    assert "str:concatx" in info.value.message


def test_chained_queries_infer_intermediate_streams():
    plan = cep.compile(
        "define stream Nums (n int);\n"
        "from Nums select n * 2 as dbl, avg(n) as a insert into Mid;\n"
        "from Mid[dbl > 4] select dbl / 4 as q, a insert into Out;"
    )
    assert plan.inferred_streams == {"Mid", "Out"}
    mid = plan.stream("Mid")
    assert [(a.name, a.type) for a in mid.attributes] == [
        ("dbl", AttrType.INT),
        ("a", AttrType.DOUBLE),
    ]
    assert [a.type for a in plan.stream("Out").attributes] == [AttrType.INT, AttrType.DOUBLE]
    assert [s.id for s in plan.streams] == ["Nums", "Mid", "Out"]


def test_defined_output_stream_must_match():
    plan = cep.compile(
        "define stream S (a int);\ndefine stream Out (x int);\nfrom S select a insert into Out;"
    )
    assert plan.inferred_streams == frozenset()


def test_function_call_model():
    q = query_of("from Ticks select coalesce(sym, 'none') as c insert into Out;")
    call = q.selector.attributes[0].expression
    assert isinstance(call, FunctionCall) and call.name == "coalesce" and len(call.args) == 2


def test_query_text_and_span_include_annotations_not_semicolon():
    text = TICKS + "@info(name = 'q1')\nfrom Ticks select sym\ninsert into Out;\n"
    q = cep.compile(text).queries[0]
    assert q.text == "@info(name = 'q1')\nfrom Ticks select sym\ninsert into Out"
    assert (q.span.line, q.span.column, q.span.end_line, q.span.end_column) == (2, 1, 4, 16)
    assert text[q.span.start_pos : q.span.end_pos] == q.text
    assert q.name == "q1"


def test_stream_definition_text_and_plan_source():
    text = "@Import('S:1.0.0')\ndefine stream S (a int);\nfrom S select a insert into O;"
    plan = cep.compile(text)
    assert plan.stream("S").text == "@Import('S:1.0.0')\ndefine stream S (a int)"
    assert plan.source == text


def test_delete_on_table_output_model():
    plan = cep.compile(
        "define stream D (k string);\ndefine table T (k string, v double);\n"
        "from D delete T for expired events on T.k == k;"
    )
    out = plan.queries[0].output
    assert isinstance(out, DeleteFrom) and out.target == "T" and out.event_type == "expired"


def test_single_input_model():
    q = query_of("from Ticks select sym insert into Out;")
    assert q.input == SingleInputStream("Ticks")


def test_int_literal_range():
    first = query_of("from Ticks select -2147483648 as c insert into Out;").selector.attributes[0]
    assert first.expression.value == -(2**31)
    with pytest.raises(cep.SiddhiQLError) as info:
        query_of("from Ticks select 2147483648 as c insert into Out;")
    assert "2147483648L" in info.value.message
    assert (
        query_of("from Ticks select 2147483648L as c insert into Out;")
        .selector.attributes[0]
        .expression.value
        == 2**31
    )


def test_keywords_are_names_where_no_keyword_fits():
    plan = cep.compile(
        "define stream S (time long, last int, events int, window double, start string);\n"
        "from every e1=S -> e2=S[last > e1.last] select e1.start as start, e2.window as drop, "
        "e2[last].time as output, e1.events as events insert into Out;"
    )
    assert plan.stream("Out").attribute_names == ("start", "drop", "output", "events")


def test_fifty_query_plan_compiles():
    """A 50-query plan compiles (its speed: benchmarks/validate_bench.py)."""
    import time

    body = "\n".join(
        f"@info(name='q{i}') from Ticks[price > {i}.0]#window.time(1 min) select sym, "
        f"avg(price) as ap, sum(vol) as sv group by sym having ap > 1.0 insert into O{i};"
        for i in range(50)
    )
    cep.compile(TICKS + body)  # warm up: builds the cached parser
    start = time.perf_counter()
    plan = cep.compile(TICKS + body)
    print(f"compiled in {time.perf_counter() - start:.3f} s")
    assert len(plan.queries) == 50
    assert [q.output.target for q in plan.queries] == [f"O{i}" for i in range(50)]
