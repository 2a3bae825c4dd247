"""Siddhi 3.2 rules that differential testing found (expressions, functions, aggregates, rate
limiting), each checked in query shapes other than the fuzz case that found it."""

import gc
import math
import warnings

import pytest

from tests.cep.engine.helpers import collect, feed, runtime


def run(plan, events, out="Out", batch=1):
    rt = runtime("@Plan:playback\n" + plan)
    got = collect(rt, [out])
    feed(rt, events, batch)
    rt.shutdown()
    return [row for _, row in got[out]]


# -- null logic: and/or/not are two-valued, `!=` with null is true --


def test_and_or_with_null_give_false_not_null_in_a_filter_and_a_projection():
    plan = (
        "define stream S (b bool, c bool);\n"
        "from S[not (b and c)] select b or c as o, b and c as a insert into Out;"
    )
    rows = run(plan, [("S", 1, (None, None)), ("S", 2, (None, True)), ("S", 3, (False, None))])
    assert rows == [(False, False), (True, False), (False, False)]


def test_not_of_null_is_true():
    rows = run(
        "define stream S (b bool);\nfrom S[not b] select not b as n insert into Out;",
        [("S", 1, (None,)), ("S", 2, (True,))],
    )
    assert rows == [(True,)]


@pytest.mark.parametrize("batch", [1, 10])
def test_not_equal_with_null_is_true_and_other_comparisons_false(batch):
    plan = (
        "define stream S (s string, t string);\n"
        "from S select s != t as ne, s == t as eq insert into Out;"
    )
    rows = run(
        plan,
        [
            ("S", 1, (None, "x")),
            ("S", 2, ("x", None)),
            ("S", 3, (None, None)),
            ("S", 4, ("x", "x")),
        ],
        batch=batch,
    )
    assert rows == [(True, False), (True, False), (True, False), (False, True)]


def test_not_equal_null_in_having_with_group_by():
    plan = (
        "define stream S (k string, i int);\n"
        "from S#window.lengthBatch(2) select k, max(i) as m group by k having m != 3 "
        "insert into Out;"
    )
    rows = run(plan, [("S", 1, ("a", None)), ("S", 2, ("b", 3))])
    assert rows == [("a", None)]


def test_not_equal_null_in_a_join_condition():
    plan = (
        "define stream A (k string);\ndefine stream B (k string);\n"
        "from A#window.length(5) join B#window.length(5) on A.k != B.k "
        "select A.k as a, B.k as b insert into Out;"
    )
    rows = run(plan, [("A", 1, (None,)), ("B", 2, ("x",))])
    assert rows == [(None, "x")]


# -- cast, convert, 32-bit float arithmetic, % of infinity --


def test_cast_passes_values_through_in_any_direction():
    plan = (
        "define stream S (i int, s string, d double);\n"
        "from S select cast(i, 'string') as a, cast(s, 'int') as b, cast(d, 'long') as c "
        "insert into Out;"
    )
    assert run(plan, [("S", 1, (7, "x", 2.5))]) == [(7, "x", 2.5)]


def test_convert_of_a_float_saturates_and_nan_becomes_zero():
    plan = (
        "define stream S (f float, d double);\n"
        "from S select convert(f, 'int') as fi, convert(d, 'long') as dl, "
        "convert(d, 'int') as di insert into Out;"
    )
    rows = run(
        plan,
        [("S", 1, (3.0e38, math.nan)), ("S", 2, (-3.0e38, math.inf)), ("S", 3, (-2.75, -2.75))],
    )
    assert rows == [
        (2147483647, 0, 0),
        (-2147483648, 9223372036854775807, 2147483647),
        (-2, -2, -2),
    ]


def test_convert_of_a_long_to_int_still_wraps():
    plan = "define stream S (l long);\nfrom S select convert(l, 'int') as i insert into Out;"
    assert run(plan, [("S", 1, (4294967297,))]) == [(1,)]


def test_float_arithmetic_rounds_an_int_operand_to_32_bits_first():
    # 16777217 is not a float: Java computes (float) 16777217 = 16777216f, then 16777216f + 1f
    plan = (
        "define stream S (i int, l long, f float);\n"
        "from S select i + f as a, l * f as b, i / f as c insert into Out;"
    )
    rows = run(plan, [("S", 1, (16777217, 9007199254740993, 1.0))])
    assert rows == [(16777216.0, 9007199254740992.0, 16777216.0)]


@pytest.mark.parametrize("batch", [1, 10])
def test_long_compared_with_a_double_is_rounded_to_double_first(batch):
    plan = (
        "define stream S (l long, d double);\n"
        "from S[l == d or l is null] select l, l > d as gt, l != d as ne insert into Out;"
    )
    rows = run(
        plan, [("S", 1, (9007199254740993, 9007199254740992.0)), ("S", 2, (None, 1.0))], batch=batch
    )
    assert rows == [(9007199254740993, False, False), (None, False, True)]


@pytest.mark.parametrize("batch", [1, 10])
def test_modulo_of_infinity_is_nan_and_no_event_is_dropped(batch):
    plan = (
        "define stream S (d double);\n"
        "from S select d % 2.0 as m, (d * 10.0) % 0.0 as z insert into Out;"
    )
    rows = run(plan, [("S", 1, (math.inf,)), ("S", 2, (-math.inf,)), ("S", 3, (5.0,))], batch=batch)
    assert [math.isnan(m) for m, _ in rows[:2]] == [True, True]
    assert rows[2] == (1.0, None) and rows[0][1] is None


def test_modulo_of_infinity_inside_an_aggregate_keeps_the_event():
    plan = (
        "define stream S (d double);\n"
        "from S#window.length(2) select count() as n, sum(d % 3.0) as s insert into Out;"
    )
    rows = run(plan, [("S", 1, (math.inf,)), ("S", 2, (4.0,))])
    assert [n for n, _ in rows] == [1, 2] and math.isnan(rows[1][1])


# -- aggregates: stddev is Siddhi's running (Welford) form, distinctcount counts null --


@pytest.mark.parametrize("batch", [1, 10])
def test_stddev_keeps_siddhis_running_sum_of_squares_which_can_drift_to_nan(batch):
    # the true deviation of (0.7, 0.7) is 0; Siddhi's add/remove leave a tiny negative sum of
    # squares and Math.sqrt gives NaN
    plan = (
        "define stream S (d double);\n"
        "from S#window.length(2) select stddev(d) as sd insert into Out;"
    )
    rows = run(plan, [("S", i, (v,)) for i, v in enumerate((1.1, 0.2, 0.7, 0.7, 1.1))], batch=batch)
    sd = [r[0] for r in rows]
    assert sd[0] == 0.0 and sd[1] == pytest.approx(0.45) and sd[2] == pytest.approx(0.25)
    assert math.isnan(sd[3]) and sd[4] == pytest.approx(0.2)


@pytest.mark.parametrize("batch", [1, 10])
def test_distinctcount_counts_null_as_a_value_and_forgets_it_on_expiry(batch):
    plan = (
        "define stream S (s string);\n"
        "from S#window.length(2) select distinctcount(s) as n insert into Out;"
    )
    rows = run(
        plan,
        [("S", 1, (None,)), ("S", 2, (None,)), ("S", 3, ("a",)), ("S", 4, ("b",))],
        batch=batch,
    )
    assert rows == [(1,), (1,), (2,), (2,)]


def test_distinctcount_of_null_per_group():
    plan = (
        "define stream S (k string, s string);\n"
        "from S select k, distinctcount(s) as n group by k insert into Out;"
    )
    rows = run(plan, [("S", 1, ("x", None)), ("S", 2, ("x", "a")), ("S", 3, ("y", None))])
    assert rows == [("x", 1), ("x", 2), ("y", 1)]


# -- output first every N events with group by: held until the N-th event --

FIRST_BY_GROUP = (
    "define stream S (k string, n int);\n"
    "from S select k, n group by k output first every 3 events insert into Out;"
)


def test_first_every_n_events_per_group_holds_rows_until_the_nth_event():
    rt = runtime("@Plan:playback\n" + FIRST_BY_GROUP)
    got = collect(rt, ["Out"])
    h = rt.input_handler("S")
    h.send(("A", 1), 1000)
    h.send(("B", 2), 1001)
    assert got["Out"] == []  # held: the period has seen 2 of its 3 events
    h.send(("A", 3), 1002)
    assert got["Out"] == [(1000, ("A", 1)), (1001, ("B", 2))]
    h.send(("B", 4), 1003)  # the next period starts afresh, and never completes
    rt.shutdown()
    assert len(got["Out"]) == 2


@pytest.mark.parametrize("batch", [1, 2, 7])
def test_first_every_n_events_per_group_is_the_same_in_any_batching(batch):
    keys = "ABACBBCAAB"
    rows = run(FIRST_BY_GROUP, [("S", 1000 + i, (k, i)) for i, k in enumerate(keys)], batch=batch)
    # periods [A B A] [C B B] [C A A]; the 10th event starts a period that never completes
    assert rows == [("A", 0), ("B", 1), ("C", 3), ("B", 4), ("C", 6), ("A", 7)]


def test_first_every_n_events_without_group_by_emits_at_once():
    rt = runtime(
        "@Plan:playback\ndefine stream S (n int);\n"
        "from S select n output first every 3 events insert into Out;"
    )
    got = collect(rt, ["Out"])
    rt.input_handler("S").send((1,), 1000)
    rt.shutdown()
    assert got["Out"] == [(1000, (1,))]


# -- no warnings from generated code --

LITERAL_QUERIES = [
    "from S[0.5f <= 100.125] select i insert into Out;",
    "from S select 1 is null as a, not (1 == 1) as b, -(2) * 3 as c, 1.0e308 * 10.0 % 3.0 as d "
    "insert into Out;",
    "from S select 'a' != 'b' and true as a, 7 / 0 as b, 2147483647 + 1 as c, 1L * 2.5f as d "
    "insert into Out;",
    "from S#window.length(2) select sum(i) as s having 1 < 2 and null is null insert into Out;",
    "from S select ifThenElse(0.5f <= 100.125, 1, 2) as a, convert(1 < 2, 'string') as b "
    "insert into Out;",
    "from every e1=S[1 == 1] -> e2=S[e2.i > e1.i and 2 > 1] select e1.i as a, e2.i as b "
    "insert into Out;",
]


@pytest.mark.parametrize("query", LITERAL_QUERIES)
def test_literal_operations_are_folded_without_any_warning(query):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rows = run("define stream S (i int);\n" + query, [("S", 1, (1,)), ("S", 2, (2,))])
    assert rows


def test_folded_literals_keep_java_semantics():
    q = (
        "from S select 2147483647 + 1 as a, 7 / 0 as b, -7 % 3 as c, 1L * 2.5f as d, "
        "1 is null as e, null != 1 as f, 0.1f + 0.0f as g insert into Out;"
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rows = run("define stream S (i int);\n" + q, [("S", 1, (1,))])
    assert rows == [(-2147483648, None, -1, 2.5, False, True, 0.10000000149011612)]


def test_no_conformance_plan_makes_a_warning(tmp_path):
    from tests.conformance.conformance import case_files, load_case, run_in_process

    gc.collect()  # what earlier tests of this process left is finalized before the record
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for kind in ("single", "multi", "fuzz"):
            for name in case_files(kind):
                folder = tmp_path / kind / name
                folder.mkdir(parents=True)
                run_in_process(load_case(kind, name), folder)
    # the engine runs no asyncio: an event loop collected meanwhile is an earlier test's
    # connector (seen once in a clean-clone run with 4 test processes), not a plan's warning
    assert [
        str(w.message)
        for w in caught
        if not (w.category is ResourceWarning and str(w.message).startswith("unclosed event loop"))
    ] == []


@pytest.mark.parametrize("window", ["", "#window.length(3)", "#window.lengthBatch(2)"])
def test_sum_of_longs_wraps_like_a_java_long(window):
    plan = (
        "define stream S (k string, l long);\n"
        f"from S{window} select k, sum(l) as s group by k insert into Out;"
    )
    big = 9223372036854775807
    rows = run(plan, [("S", 1, ("a", big)), ("S", 2, ("a", 2))])
    assert rows[-1] == ("a", -9223372036854775807)


def test_integer_division_of_min_value_by_minus_one_overflows_like_java():
    plan = (
        "define stream S (i int, l long);\n"
        "from S select i / -1 as a, l / -1 as b, i % -1 as c insert into Out;"
    )
    rows = run(plan, [("S", 1, (-2147483648, -9223372036854775808))])
    assert rows == [(-2147483648, -9223372036854775808, 0)]


def test_convert_of_a_float_to_string_is_float_to_string():
    plan = (
        "define stream S (f float, d double);\n"
        "from S select convert(f, 'string') as a, convert(d, 'string') as b insert into Out;"
    )
    rows = run(plan, [("S", 1, (0.1, 0.1)), ("S", 2, (1.0e10, 1.0e10))])
    assert rows == [("0.1", "0.1"), ("1.0E10", "1.0E10")]


@pytest.mark.parametrize("key", ["U.k", "convert(U.k, 'string')"])
@pytest.mark.parametrize("outer", ["join", "left outer join"])
def test_a_null_key_finds_no_row_in_an_indexed_table(key, outer):
    plan = (
        "define stream S (k string, v int);\ndefine stream U (k string);\n"
        "@IndexBy('k')\ndefine table T (k string, v int);\n"
        "from S insert into T;\n"
        f"from U {outer} T on T.k == {key} select U.k as k, T.v as v insert into Out;"
    )
    rows = run(plan, [("S", 1, (None, 5)), ("S", 2, ("a", 6)), ("U", 3, (None,)), ("U", 4, ("a",))])
    assert rows == ([("a", 6)] if outer == "join" else [(None, None), ("a", 6)])


def test_an_int_sent_to_a_float_attribute_is_rounded_once():
    # 2^53 + 2^29 + 1 is just past half-way between two floats: rounding through a double
    # first (to 2^53) would round it down
    rt = runtime("@Plan:playback\ndefine stream S (f float);\nfrom S select f insert into Out;")
    got = collect(rt, ["Out"])
    assert rt.input_handler("S").send_batch([(1, (2**53 + 2**29 + 1,))]) == []
    rt.shutdown()
    assert got["Out"] == [(1, (float(2**53 + 2**30),))]


def test_convert_of_a_long_to_float_rounds_once():
    plan = "define stream S (l long);\nfrom S select convert(l, 'float') as f insert into Out;"
    assert run(plan, [("S", 1, (2**53 + 2**29 + 1,)), ("S", 2, (None,))]) == [
        (float(2**53 + 2**30),),
        (None,),
    ]


def test_convert_to_string_prints_integral_values_as_java_8_to_17_do():
    # outputs of Double.toString / Float.toString on Java 17 (Siddhi 3.2 runs on Java 8,
    # same algorithm): integral values keep their own digits, not the shortest ones
    plan = (
        "define stream S (d double, f float);\n"
        "from S select convert(d, 'string') as a, convert(f, 'string') as b insert into Out;"
    )
    rows = run(
        plan,
        [
            ("S", 1, (4.534510405949953e16, -441035264.0)),
            ("S", 2, (1.0e7, 12345678.0)),
            ("S", 3, (-(2.0**63), 9999999.0)),
        ],
    )
    assert rows == [
        ("4.5345104059499528E16", "-4.41035264E8"),
        ("1.0E7", "1.2345678E7"),
        ("-9.223372036854776E18", "9999999.0"),
    ]


def test_convert_parses_strings_as_java_does():
    # Integer.parseInt / Double.parseDouble / Boolean.parseBoolean; null where Java throws
    plan = (
        "define stream S (s string);\n"
        "from S select convert(s, 'int') as i, convert(s, 'long') as l, "
        "convert(s, 'double') as d, convert(s, 'bool') as b insert into Out;"
    )
    rows = run(
        plan,
        [
            ("S", 1, ("42",)),
            ("S", 2, ("3.5",)),
            ("S", 3, (" 7",)),
            ("S", 4, ("3000000000",)),
            ("S", 5, ("TRUE",)),
            ("S", 6, ("1.5f",)),
        ],
    )
    assert rows == [
        (42, 42, 42.0, False),
        (None, None, 3.5, False),
        (None, None, 7.0, False),
        (None, 3000000000, 3e9, False),
        (None, None, None, True),
        (None, None, 1.5, False),
    ]


def test_convert_of_a_number_to_bool_is_true_only_for_one():
    plan = (
        "define stream S (i int, d double);\n"
        "from S select convert(i, 'bool') as a, convert(d, 'bool') as b insert into Out;"
    )
    assert run(plan, [("S", 1, (1, 1.0)), ("S", 2, (2, 0.5))]) == [(True, True), (False, False)]


@pytest.mark.parametrize("batch", [1, 3])
def test_first_every_period_per_group_holds_rows_until_the_period_ends(batch):
    plan = (
        "@Plan:playback\ndefine stream S (k string, n int);\n"
        "from S select k, n group by k output first every 1 sec insert into Out;"
    )
    rt = runtime(plan)
    got = collect(rt, ["Out"])
    feed(rt, [("S", 1000, ("A", 1)), ("S", 1100, ("B", 2)), ("S", 1500, ("A", 3))], batch)
    assert got["Out"] == []  # held until the period [1000, 2000) ends
    feed(rt, [("S", 2100, ("A", 4))], batch)
    assert got["Out"] == [(1000, ("A", 1)), (1100, ("B", 2))]
    rt.advance_time(3000)
    rt.shutdown()
    assert got["Out"][2:] == [(2100, ("A", 4))]
