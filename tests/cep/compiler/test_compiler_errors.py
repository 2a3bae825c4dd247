"""Rejected plans: each error class, with the position (start and end) of the offending text."""

import pytest

import cep
from cep.errors import (
    AnnotationError,
    DuplicateDefinitionError,
    InvalidQueryError,
    SiddhiQLSyntaxError,
    TypeMismatchError,
    UnknownAttributeError,
    UnknownFunctionError,
    UnknownStreamError,
    UnknownWindowError,
)

DEFS = "define stream Ticks (sym string, price double);\n"


def reject(body, error_class, defs=DEFS):
    with pytest.raises(error_class) as info:
        cep.compile(defs + body)
    return info.value


def where(error):
    s = error.span
    return (s.line, s.column, s.end_line, s.end_column)


def test_misspelled_select_is_a_syntax_error_naming_the_token():
    e = reject("from Ticks selec sym insert into Out;", SiddhiQLSyntaxError)
    assert "mismatched input 'selec'" in e.message and "SELECT" in e.message
    assert where(e) == (2, 12, 2, 17)
    assert str(e).startswith("line 2, column 12: ")
    assert e.snippet() == "from Ticks selec sym insert into Out;\n           ^^^^^"


def test_missing_semicolon_hint():
    e = reject(
        "from Ticks select sym insert into Out\nfrom Ticks select sym insert into O2;",
        SiddhiQLSyntaxError,
    )
    assert "missing ';'" in e.message and where(e)[:2] == (3, 1)


def test_unexpected_character_and_eof():
    e = reject("from Ticks[price > 1.0 $] select sym insert into Out;", SiddhiQLSyntaxError)
    assert "'$'" in e.message and where(e)[:2] == (2, 24)
    e = reject("from Ticks select sym insert into", SiddhiQLSyntaxError)
    assert "end of plan" in e.message


def test_unknown_input_stream():
    e = reject("from Tickz select sym insert into Out;", UnknownStreamError)
    assert "'Tickz'" in e.message and where(e) == (2, 6, 2, 11)


def test_unknown_attribute_in_filter_group_by_and_having():
    e = reject("from Ticks[qty > 3] select sym insert into Out;", UnknownAttributeError)
    assert "'qty'" in e.message and where(e) == (2, 12, 2, 15)
    e = reject(
        "from Ticks select sym, sum(price) as s group by venue insert into Out;",
        UnknownAttributeError,
    )
    assert "'venue'" in e.message
    e = reject(
        "from Ticks select sym, sum(price) as s group by sym having total > 3.0 insert into Out;",
        UnknownAttributeError,
    )
    assert "'total'" in e.message and where(e)[:2] == (2, 60)


def test_unknown_function_and_window():
    e = reject(
        "from Ticks select sym, frobnicate(price) as f insert into Out;", UnknownFunctionError
    )
    assert "'frobnicate'" in e.message and where(e) == (2, 24, 2, 41)
    e = reject("from Ticks#window.lenght(3) select sym insert into Out;", UnknownWindowError)
    assert "'lenght'" in e.message


@pytest.mark.parametrize(
    "body,words",
    [
        (
            "from Ticks[price > 'abc'] select sym insert into Out;",
            "double cannot be compared with string",
        ),
        ("from Ticks[price] select sym insert into Out;", "bool"),
        ("from Ticks#window.length('ten') select sym insert into Out;", "not string"),
        ("from Ticks select sum(sym) as s insert into Out;", "sum not supported for string"),
        ("from Ticks select ifThenElse(price > 1.0, 'big', 0) as l insert into Out;", "ifThenElse"),
        ("from Ticks select sym + sym as s insert into Out;", "string"),
        ("from Ticks[price > 1.0 and sym] select sym insert into Out;", "bool"),
        ("from Ticks select coalesce(sym, price) as c insert into Out;", "one type"),
        ("from Ticks select convert(price, 'integer') as c insert into Out;", "unknown type"),
        ("from Ticks#window.time(sym) select sym insert into Out;", "constant"),
        ("from Ticks#window.length(1, 2) select sym insert into Out;", "at most"),
        ("from Ticks#window.externalTime(price, 1 sec) select sym insert into Out;", "long"),
    ],
)
def test_type_mismatches(body, words):
    e = reject(body, TypeMismatchError)
    assert words in e.message


def test_type_error_span_covers_the_comparison():
    e = reject("from Ticks[price > 'abc'] select sym insert into Out;", TypeMismatchError)
    assert where(e) == (2, 12, 2, 25)


def test_duplicate_definitions():
    e = reject("define stream Ticks (a int);", DuplicateDefinitionError)
    assert "'Ticks'" in e.message and where(e)[:2] == (2, 1)
    reject("define table Ticks (a int);", DuplicateDefinitionError)
    reject("define stream S (a int, a long);", DuplicateDefinitionError)
    reject("from Ticks select sym, price as sym insert into Out;", DuplicateDefinitionError)


def test_defined_target_must_match_count_and_types():
    defs = DEFS + "define stream Out (s string);\n"
    e = reject("from Ticks select sym, price insert into Out;", DuplicateDefinitionError, defs)
    assert "'Out'" in e.message
    defs = DEFS + "define stream Out (s string, p int);\n"
    reject("from Ticks select sym, price insert into Out;", TypeMismatchError, defs)


def test_inferred_stream_reused_with_other_types_is_rejected():
    reject(
        "from Ticks select sym insert into Mid;\nfrom Ticks select price insert into Mid;",
        TypeMismatchError,
    )


def test_define_after_query_and_reserved_in():
    e = reject(
        "from Ticks select sym insert into Out;\ndefine stream Late (a int);", SiddhiQLSyntaxError
    )
    assert "before the first query" in e.message and where(e)[:2] == (3, 1)
    e = reject("define stream In (k string);", SiddhiQLSyntaxError)
    assert "stream In" in e.message


def test_aggregator_outside_select_is_invalid():
    reject("from Ticks[sum(price) > 1.0] select sym insert into Out;", InvalidQueryError)


def test_aggregator_names_case_sensitive_past_first_letter():
    cep.compile(
        DEFS + "from Ticks select Sum(price) as s, stddev(price) as d, "
        "distinctcount(sym) as c insert into Out;"
    )
    reject("from Ticks select SUM(price) as s insert into Out;", UnknownFunctionError)
    reject("from Ticks select stdDev(price) as s insert into Out;", UnknownFunctionError)


def test_unnamed_computed_select_expression():
    e = reject("from Ticks select price * 2 insert into Out;", SiddhiQLSyntaxError)
    assert "as <name>" in e.message


def test_bad_plan_name_annotation():
    e = reject(
        "from Ticks select sym insert into Out;", AnnotationError, "@Plan:name('my plan')\n" + DEFS
    )
    assert where(e)[:2] == (1, 1)


def test_errors_serialise_for_the_api():
    e = reject("from Tickz select sym insert into Out;", UnknownStreamError)
    d = e.to_dict()
    assert d["error"] == "UnknownStreamError" and d["line"] == 2 and d["column"] == 6
    assert d["endLine"] == 2 and d["endColumn"] == 11


def test_unterminated_string_and_reserved_alias():
    e = reject("from Ticks[sym == 'abc] select sym insert into Out;", SiddhiQLSyntaxError)
    assert "unterminated string" in e.message and where(e)[:2] == (2, 19)
    e = reject(
        "from Ticks#window.length(1) as in join Ticks#window.length(1) as b "
        "select b.sym as s insert into Out;",
        SiddhiQLSyntaxError,
    )
    assert "reserved" in e.message


def test_rate_limits_must_be_positive():
    reject("from Ticks select sym output every 0 events insert into Out;", SiddhiQLSyntaxError)
    reject("from Ticks select sym output every 0 sec insert into Out;", SiddhiQLSyntaxError)


def test_trailing_comma_hint_names_the_keyword_read_as_a_name():
    e = reject("from Ticks select sym, insert into Out;", SiddhiQLSyntaxError)
    assert "'insert' was read as a name" in e.message and where(e)[:2] == (2, 31)


def test_having_and_order_by_see_the_output_row_and_aggregators_the_input():
    cep.compile(
        DEFS + "from Ticks select sym, sum(price) as s group by sym "
        "having avg(price) > 1.0 and s > 2.0 order by s insert into Out;"
    )
    e = reject(
        "from Ticks select sym group by sym having price > 1.0 insert into Out;",
        UnknownAttributeError,
    )
    assert "'price'" in e.message and "output" in e.message
    reject("from Ticks select sym order by price insert into Out;", UnknownAttributeError)


def test_trigger_at_needs_start_or_cron():
    e = reject("define trigger T at 'tomorrow';", SiddhiQLSyntaxError)
    assert "cron" in e.message and where(e) == (2, 21, 2, 31)
    cep.compile("define trigger T at '0 0 12 * * ?';")


def test_duplicate_points_at_the_later_definition_whatever_its_kind():
    e = reject(
        "define stream Tab (a int);", DuplicateDefinitionError, "define table Tab (a int);\n"
    )
    assert where(e)[:2] == (2, 1)


def test_window_and_invalid_query_errors_have_positions():
    e = reject("from Ticks#window.lenght(3) select sym insert into Out;", UnknownWindowError)
    assert where(e) == (2, 11, 2, 28)
    e = reject("from Ticks[sum(price) > 1.0] select sym insert into Out;", InvalidQueryError)
    assert where(e) == (2, 12, 2, 22)
    e = reject("from Ticks select sym insert into #Inner;", InvalidQueryError)
    assert where(e) == (2, 23, 2, 41)
