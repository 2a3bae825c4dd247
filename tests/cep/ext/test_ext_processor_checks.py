"""Namespaced stream processors and kf:kalmanFilter: the compiler checks their parameters with
positioned errors, adds the attributes they append to the query's scope, and rejects them
where the engine cannot run them."""

import pytest

import cep
from cep.engine.runtime import ExecutionPlanRuntime
from cep.errors import InvalidQueryError, TypeMismatchError, UnknownFunctionError

DEFS = "define stream S (id string, st string, t long, v double, n int, ok bool);\n"


def reject(body, error_class):
    with pytest.raises(error_class) as info:
        cep.compile(DEFS + body)
    return info.value


def where(error):
    return error.span.line, error.span.column


def test_appended_attributes_are_in_scope_and_in_select_star():
    rt = ExecutionPlanRuntime(
        cep.compile(
            DEFS + "from S#markov:markovChain(id, st, 60 min, 0.2, 0) select * insert into Out;"
            "from S#markov:markovChain(id, st, 60 min, 0.2, 0)[notify] "
            "select lastState, transitionProbability insert into Out2;"
        ),
        playback=True,
    )
    got = {"Out": [], "Out2": []}
    for name in got:
        rt.add_callback(name, got[name].extend)
    for ts, row in ((1, ("a", "x", 1, 1.0, 1, True)), (2, ("a", "y", 2, 1.0, 1, True))):
        rt.input_handler("S").send(row, ts)
    assert [r for _, r in got["Out"]] == [
        ("a", "x", 1, 1.0, 1, True, None, 0.0, False),
        ("a", "y", 2, 1.0, 1, True, "x", 0.0, True),
    ]
    assert [r for _, r in got["Out2"]] == [("x", 0.0)]


def test_an_appended_attribute_is_not_visible_before_its_processor():
    e = reject(
        "from S[notify]#markov:markovChain(id, st, 60 min, 0.2, 5) select id insert into Out;",
        Exception,
    )
    assert "notify" in str(e)


def test_unknown_namespaced_stream_processor():
    e = reject("from S#foo:bar(v) select v insert into Out;", UnknownFunctionError)
    assert "#foo:bar" in e.message and "#reorder:kslack" in e.message
    assert where(e) == (2, 7)


def test_kslack_needs_a_long_timestamp_and_constant_options():
    e = reject("from S#reorder:kslack(v) select v insert into Out;", TypeMismatchError)
    assert "long" in e.message and where(e) == (2, 23)
    e = reject("from S#reorder:kslack(t, t) select v insert into Out;", TypeMismatchError)
    assert "constant" in e.message and where(e) == (2, 26)
    e = reject(
        "from S#reorder:kslack(t, 1000l, 10l, 1) select v insert into Out;", TypeMismatchError
    )
    assert "bool" in e.message


def test_markov_checks_the_original_rules():
    e = reject(
        "from S#markov:markovChain(id, st, t, 0.2, 5) select id insert into Out;", TypeMismatchError
    )
    assert "Duration has to be a constant" in e.message and where(e) == (2, 35)
    e = reject(
        "from S#markov:markovChain(id, st, 60 min, 1, 5) select id insert into Out;",
        TypeMismatchError,
    )
    assert "double" in e.message
    e = reject(
        "from S#markov:markovChain(id, st, 60 min, 0.2) select id insert into Out;",
        TypeMismatchError,
    )
    assert "5 or 6 parameters" in e.message


def test_markov_matrix_file_must_exist(tmp_path):
    plan = cep.compile(
        DEFS + f"from S#markov:markovChain(id, st, 60 min, 0.2, "
        f"'{tmp_path / 'none.csv'}') select id insert into Out;"
    )
    with pytest.raises(InvalidQueryError) as info:
        ExecutionPlanRuntime(plan, playback=True)
    assert "does not exist" in info.value.message


def test_stream_processor_on_a_join_side_is_refused():
    e = reject(
        "define stream T (id string);\nfrom S#reorder:kslack(t) as a join T#window."
        "length(1) as b on a.id == b.id select a.id insert into Out;",
        InvalidQueryError,
    )
    assert "#reorder:kslack" in e.message and "join" in e.message


def test_kalman_filter_argument_types():
    e = reject("from S select kf:kalmanFilter(n) as k insert into Out;", TypeMismatchError)
    assert "double" in e.message and where(e) == (2, 31)
    e = reject("from S select kf:kalmanFilter(v, v, v) as k insert into Out;", TypeMismatchError)
    assert "1, 2 or 4" in e.message
    e = reject("from S select kf:kalmanFilter(v, v, v, v) as k insert into Out;", TypeMismatchError)
    assert "long" in e.message
