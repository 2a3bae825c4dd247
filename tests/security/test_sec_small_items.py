"""Smaller holes an outside tester found: windows with a negative or zero span, a plan named
like a command-line flag, and a plan listener on a port the system uses."""

import pytest

import cep
from cep.errors import SiddhiQLError
from manager.exceptions import BadPlanNameError, PlanRejectedError

S = "define stream S (a int);\n"


@pytest.mark.parametrize(
    "window,where",
    [
        ("time(-1 sec)", "must be a positive time (at least 1 millisecond), not -1000 ms"),
        ("time(0 sec)", "must be a positive time"),
        ("timeBatch(0)", "must be a positive time"),
        ("length(-3)", "must be a length of 0 or more, not -3"),
        ("timeLength(-5 sec, 10)", "must be a positive time"),
    ],
)
def test_negative_and_zero_window_spans_are_refused_with_their_position(window, where):
    with pytest.raises(SiddhiQLError, match=where.replace("(", r"\(").replace(")", r"\)")) as err:
        cep.compile(f"{S}from S#window.{window} select a insert into O;")
    assert err.value.span.line == 2  # positioned on the parameter
    cep.compile(f"{S}from S#window.time(1 sec) select a insert into O;")  # fine
    cep.compile(f"{S}from S#window.length(0) select a insert into O;")  # an empty window


@pytest.mark.parametrize("name", ["-rf", "_x", "9lives", ".hidden"])
def test_plan_names_must_start_with_a_letter(manager, name):
    with pytest.raises((BadPlanNameError, PlanRejectedError), match="starting with a letter"):
        manager.plans.add(-1234, f"@Plan:name('{name}')\n{S}from S select a insert into O;")
    manager.plans.add(-1234, f"@Plan:name('Ok-1.x_2')\n{S}from S select a insert into O;")


@pytest.mark.parametrize(
    "source,why",
    [
        ("@source(type='http', port='9763')", "port 9763 is one the CEP system itself uses"),
        ("@source(type='http', port='8904')", "port 8904 is one the CEP system itself uses"),
        ("@source(type='http', port='80')", "port 80 is privileged"),
        ("@source(type='zmq', url='tcp://127.0.0.1:9091')", "port 9091 is one the CEP system"),
    ],
)
def test_a_plan_listener_cannot_take_a_port_the_system_uses(manager, source, why):
    with pytest.raises(PlanRejectedError, match=why):
        manager.plans.add(
            -1234, f"@Plan:name('Claims')\n{source}\n{S}from S select a insert into O;"
        )


def test_the_managers_own_configured_ports_are_reserved_too(manager):
    port = manager.registry.port  # a free port chosen at start, not a default
    with pytest.raises(PlanRejectedError, match=f"port {port} is one the CEP system"):
        manager.plans.add(
            -1234,
            f"@Plan:name('Claims')\n@source(type='http', port='{port}')\n"
            f"{S}from S select a insert into O;",
        )


def test_a_plan_of_20000_queries_is_refused_before_any_parse(manager, monkeypatch):
    """The query limit is checked by a scan before the parser runs: a plan under the byte
    limit with 40x the query limit answers at once (its parse took minutes)."""
    import time

    import manager.plans as plans_module

    def no_parse(*_):
        raise AssertionError("the plan was parsed")

    monkeypatch.setattr(plans_module, "compile_plan", no_parse)
    body = "".join(f"from S[a > {i}] select a insert into O{i};\n" for i in range(20000))
    started = time.process_time()
    with pytest.raises(PlanRejectedError, match="the plan has 20000 queries; the limit is 20"):
        manager.plans.add(-1234, f"@Plan:name('Many')\n{S}-- from a comment\n{body}")
    print(f"refused in {time.process_time() - started:.3f} s of CPU")


def big_plan(queries, terms):
    """A plan of `queries` queries with `terms`-term filters (about 12 bytes a term)."""
    expr = " or ".join(f"a > {i}" for i in range(terms))
    return (
        "@Plan:name('Big')\n"
        + S
        + "".join(f"from S[{expr}] select a insert into O{i};\n" for i in range(queries))
    )


def test_a_plan_that_compiles_longer_than_the_budget_is_refused_saying_so(manager):
    manager.plans.validate_secs = 0.2  # a budget this plan cannot meet (it takes seconds)
    text = big_plan(20, 250)  # 20 queries: within limits.queries; ~60 KB
    with pytest.raises(
        PlanRejectedError,
        match=r"did not compile within 0.2 s "
        r"\(limits.validate_secs\)",
    ):
        manager.plans.add(-1234, text)
    assert "Big" not in {name for _, name in manager.plans.compiled}


def test_a_large_plan_within_the_budget_compiles_and_its_errors_keep_their_positions(manager):
    manager.plans.validate_secs = 60.0
    manager.plans.add(-1234, big_plan(20, 250))  # checked in a child process, then compiled
    assert "Big" in {name for _, name in manager.plans.compiled}
    broken = big_plan(20, 250).replace("insert into O19", "insert int O19")
    with pytest.raises(PlanRejectedError) as err:
        manager.plans.validate(-1234, broken.replace("'Big'", "'Big2'"))
    assert err.value.errors and err.value.errors[0]["line"] == 22  # the child's position
