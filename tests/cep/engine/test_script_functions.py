"""Script functions: `define function f[lang] return type { body }` called as `f(args)`.
JavaScript runs in an embedded V8 with time and heap caps per call; a call that throws or
breaks a cap drops that one event (logged, counted) and the next events go on; [python] is
off unless enabled; [Scala] and [R] are refused with positioned errors."""

import pytest

import cep
from cep.engine import scripts
from cep.engine.runtime import ExecutionPlanRuntime
from cep.errors import DuplicateDefinitionError, InvalidQueryError, TypeMismatchError

CONCAT = """define function concatJ[JavaScript] return string {
    var str1 = data[0];
    var str2 = data[1];
    return str1.concat(str2); // a } in a comment
};
"""
STREAM = "define stream S (a string, b string, n int);\n"


def run(plan_text, rows):
    rt = ExecutionPlanRuntime(cep.compile(plan_text), playback=True)
    out = []
    rt.add_callback("Out", out.extend)
    for ts, row in enumerate(rows, 1):
        rt.input_handler("S").send(row, ts)
    return rt, [r for _, r in out]


@pytest.fixture
def tight_caps(monkeypatch):
    monkeypatch.setattr(scripts.LIMITS, "timeout_ms", 300.0)
    monkeypatch.setattr(scripts.LIMITS, "memory_bytes", 32 * 1024 * 1024)


def test_javascript_function_reads_data_and_returns_the_declared_type():
    rt, out = run(
        CONCAT + STREAM + "from S select concatJ(a, b) as ab, n insert into Out;",
        [("x", "y", 1), ("p", "q", 2)],
    )
    assert out == [("xy", 1), ("pq", 2)]
    rt.shutdown()


def test_numbers_and_booleans_cross_the_boundary():
    plan = (
        "define function half[JavaScript] return double { return data[0] / 2; };\n"
        "define function big[JavaScript] return bool { return data[0] > 1; };\n"
        + STREAM
        + "from S[big(n)] select half(n) as h insert into Out;"
    )
    rt, out = run(plan, [("a", "b", 1), ("a", "b", 3)])
    assert out == [(1.5,)]
    rt.shutdown()


@pytest.mark.parametrize(
    "body",
    [
        "while (true) {} return 1;",  # loops forever
        "var a = []; while (true) { a.push(new Array(100000).fill(data[0])); } return 1;",
        "throw new Error('bad input ' + data[0]);",
    ],
)
def test_a_runaway_or_throwing_script_fails_one_event_and_the_engine_goes_on(
    body, tight_caps, caplog
):
    plan = (
        "define function risky[JavaScript] return int { if (data[0] == 2) { "
        + body
        + " } return data[0] * 10; };\n"
        + STREAM
        + "from S select risky(n) as r insert into Out;"
    )
    rt, out = run(plan, [("a", "b", 1), ("a", "b", 2), ("a", "b", 3), ("a", "b", 4)])
    assert out == [(10,), (30,), (40,)]
    assert rt.failed_events() == 1
    assert "risky()" in caplog.text
    rt.shutdown()


def test_a_failing_event_in_a_batch_drops_only_that_event(tight_caps):
    plan = (
        "define function f[JavaScript] return int { if (data[0] == 2) { while (true) {} } "
        "return data[0]; };\n" + STREAM + "from S select f(n) as r insert into Out;"
    )
    rt = ExecutionPlanRuntime(cep.compile(plan), playback=True)
    out = []
    rt.add_callback("Out", out.extend)
    rt.input_handler("S").send_batch([(i, ("a", "b", i)) for i in (1, 2, 3)])
    assert [r for _, r in out] == [(1,), (3,)] and rt.failed_events() == 1
    rt.shutdown()


def test_scripts_have_no_host_access():
    plan = (
        "define function probe[JavaScript] return string { return typeof require + ',' + "
        "typeof process + ',' + typeof fetch + ',' + typeof XMLHttpRequest; };\n"
        + STREAM
        + "from S select probe() as p insert into Out;"
    )
    rt, out = run(plan, [("a", "b", 1)])
    assert out == [("undefined,undefined,undefined,undefined",)]
    rt.shutdown()


def test_a_wrong_return_type_fails_the_event():
    plan = (
        "define function f[JavaScript] return int { return 'text'; };\n"
        + STREAM
        + "from S select f(n) as r insert into Out;"
    )
    rt, out = run(plan, [("a", "b", 1)])
    assert out == [] and rt.failed_events() == 1
    rt.shutdown()


def test_a_body_that_does_not_compile_is_a_positioned_error():
    plan = cep.compile(
        "define function f[JavaScript] return int { return (; };\n"
        + STREAM
        + "from S select f(n) as r insert into Out;"
    )
    with pytest.raises(InvalidQueryError) as info:
        ExecutionPlanRuntime(plan)
    assert "does not compile" in info.value.message and info.value.span.line == 1


@pytest.mark.parametrize("language", ["Scala", "R"])
def test_scala_and_r_are_refused_where_the_language_is_named(language):
    with pytest.raises(InvalidQueryError) as info:
        cep.compile(
            f"define function f[{language}] return int {{ 1 }};\n"
            + STREAM
            + "from S select f(n) as r insert into Out;"
        )
    assert f"[{language}]" in info.value.message
    assert (info.value.span.line, info.value.span.column) == (1, 19)


def test_python_is_refused_unless_enabled(monkeypatch):
    text = (
        "define function twice[python] return int {\n    return data[0] * 2\n};\n"
        + STREAM
        + "from S select twice(n) as r insert into Out;"
    )
    plan = cep.compile(text)  # the language is known: the host decides whether it runs
    with pytest.raises(InvalidQueryError) as info:
        ExecutionPlanRuntime(plan)
    assert "scripts.python" in info.value.message and info.value.span.line == 1
    monkeypatch.setattr(scripts.LIMITS, "python", True)
    rt, out = run(text, [("a", "b", 4)])
    assert out == [(8,)]


def test_calls_are_typed_by_the_declared_return_type():
    with pytest.raises(TypeMismatchError):
        cep.compile(CONCAT + STREAM + "from S[concatJ(a, b) > 3] select a insert into Out;")


def test_a_function_cannot_take_a_built_in_name_or_be_defined_twice():
    with pytest.raises(DuplicateDefinitionError):
        cep.compile("define function coalesce[JavaScript] return int { return 1; };\n" + STREAM)
    with pytest.raises(DuplicateDefinitionError):
        cep.compile(CONCAT + CONCAT + STREAM)


def test_the_host_policy_refuses_python_unless_the_setting_allows_it():
    from cep.policy import HostPolicy, PlanPolicyError, check_plan

    plan = cep.compile(
        "define function twice[python] return int { return data[0] * 2 };\n"
        + STREAM
        + "from S select twice(n) as r insert into Out;"
    )
    with pytest.raises(PlanPolicyError) as info:
        check_plan(plan, HostPolicy(), "t1")
    assert "scripts.python" in info.value.message and info.value.span.column == 23
    check_plan(plan, HostPolicy(python_scripts=True), "t1")


def test_settings_reach_the_script_limits(monkeypatch):
    from cep.policy import HostPolicy

    monkeypatch.setattr(scripts, "LIMITS", scripts.ScriptLimits())
    HostPolicy(python_scripts=True, script_millis=250.0, script_heap_mib=16).apply_script_limits()
    assert (scripts.LIMITS.timeout_ms, scripts.LIMITS.memory_bytes, scripts.LIMITS.python) == (
        250.0,
        16 * 1024 * 1024,
        True,
    )


def test_a_failing_event_sent_as_columns_drops_only_that_event(tight_caps):
    pytest.importorskip("numpy")
    plan = (
        "define function f[JavaScript] return int { if (data[0] == 2) { throw 'no'; } "
        "return data[0]; };\n" + STREAM + "from S select f(n) as r insert into Out;"
    )
    rt = ExecutionPlanRuntime(cep.compile(plan), playback=True)
    out = []
    rt.add_callback("Out", out.extend)
    rt.input_handler("S").send_columns(
        {"a": ["a"] * 3, "b": ["b"] * 3, "n": [1, 2, 3]}, timestamps=[1, 2, 3]
    )
    assert [r for _, r in out] == [(1,), (3,)] and rt.failed_events() == 1
    rt.shutdown()
