"""The compiler writes a typed, resolved plan (issue 12): every expression node carries its
type (`rtype`) and every call its catalog entry (`entry`), and the engine builds from them
instead of deriving them again; an untyped, hand-made model still works (the engine derives)."""

import dataclasses
import glob
import pathlib
import pickle

import pytest
import yaml

import cep
from cep.catalog import aggregators, ext, ext_processors, functions, rules
from cep.engine.expressions import _Gen
from cep.model import AttrType as T, BinaryOp, Constant, FunctionCall
from cep.model.expressions import Expression

ROOT = pathlib.Path(__file__).resolve().parents[3]
CASES = sorted(glob.glob(str(ROOT / "tests/conformance/cases/**/*.yaml"), recursive=True))
PLAN = """@Plan:playback
define stream S (sym string, a int, b double, f float);
from S[a > 1 and not (sym is null) and b != 0.5]
select sym, a + b as x, a * 2 as y, convert(a, 'long') as c, maximum(a, 3) as m,
       sum(a) as s, avg(f) as af, count() as n
group by sym insert into Out;
"""
EVENTS = [(1000, ("IBM", 2, 1.5, 1.25)), (1100, ("IBM", 3, 0.5, 2.0)), (1200, ("X", 5, 2.0, 4.0))]
EXPECTED = [(1000, ("IBM", 3.5, 4, 2, 3, 2, 1.25, 1)), (1200, ("X", 7.0, 10, 5, 5, 5, 4.0, 1))]


def expressions(x, out=None):
    """Every Expression node reachable from a model object."""
    out = [] if out is None else out
    if isinstance(x, Expression):
        out.append(x)
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        for f in dataclasses.fields(x):
            expressions(getattr(x, f.name), out)
    elif isinstance(x, (tuple, list)):
        for y in x:
            expressions(y, out)
    return out


def compiled_cases():
    for path in CASES:
        try:
            yield path, cep.compile(yaml.safe_load(open(path))["plan"])
        except cep.CepError:
            continue  # cases that expect a compile error


def test_every_expression_of_every_conformance_plan_is_typed_and_calls_resolved():
    plans = nodes = 0
    for path, plan in compiled_cases():
        plans += 1
        for e in expressions(plan):
            nodes += 1
            assert isinstance(e.rtype, T), (path, e)
            if isinstance(e, FunctionCall):
                kind, namespace, name = e.entry
                found = (
                    (
                        ext.find_function(name, namespace)
                        or ext_processors.lookup_function(namespace, name)
                    )
                    if kind == "function"
                    else aggregators.lookup(name, namespace)
                )
                if kind == "script":
                    continue
                assert found is not None and found.name == name, (path, e)
    assert plans > 100 and nodes > 1000


def test_the_types_survive_pickling_and_do_not_change_equality():
    plan = cep.compile(PLAN)
    again = pickle.loads(pickle.dumps(plan))
    assert again == plan
    assert [e.rtype for e in expressions(again)] == [e.rtype for e in expressions(plan)]
    items = {i.rename: i.expression for i in plan.elements[0].selector.attributes}
    assert (items["x"].rtype, items["y"].rtype, items["c"].rtype, items["af"].rtype) == (
        T.DOUBLE,
        T.INT,
        T.LONG,
        T.DOUBLE,
    )
    assert items["c"].entry == ("function", None, "convert")
    assert items["s"].entry == ("aggregator", None, "sum") and items["s"].rtype is T.LONG


def _run(plan):
    rt = cep.ExecutionPlanRuntime(plan)
    got = []
    rt.add_callback("Out", got.extend)
    rt.input_handler("S").send_batch(EVENTS)
    rt.shutdown()
    return got


def _boom(*args, **kwargs):
    raise AssertionError("the engine derived a type the plan carries")


def test_the_engine_builds_a_typed_plan_without_the_type_rules(monkeypatch):
    plan = cep.compile(PLAN)  # typed with the rules in place
    monkeypatch.setattr(rules, "check_arity", _boom)
    monkeypatch.setattr(aggregators, "result_type_of", _boom)
    monkeypatch.setattr(_Gen, "_check_comparable", staticmethod(_boom))
    for name in ("convert", "maximum"):
        entry = functions.FUNCTIONS[name]
        monkeypatch.setitem(functions.FUNCTIONS, name, dataclasses.replace(entry, rule=_boom))
    assert _run(plan) == EXPECTED


def test_an_untyped_model_is_still_typed_by_the_engine():
    plan = cep.compile(PLAN)
    for e in expressions(plan):  # what a hand-made model looks like
        object.__setattr__(e, "rtype", None)
        object.__setattr__(e, "entry", None)
    assert _run(plan) == EXPECTED


def test_the_engine_takes_the_type_from_the_plan():
    """A plan typed `a + b` as float makes the engine compute it in 32 bits: the type is read
    from the plan, not derived (double would keep 0.1's 64-bit value)."""
    text = "define stream S (a int, b double);\nfrom S select a + b as x insert into Out;"
    plan = cep.compile(text)
    x = plan.elements[0].selector.attributes[0].expression
    assert isinstance(x, BinaryOp) and x.rtype is T.DOUBLE
    x.resolve(T.FLOAT)
    rt = cep.ExecutionPlanRuntime(plan, playback=True)
    got = []
    rt.add_callback("Out", got.extend)
    rt.input_handler("S").send_batch([(1, (0, 0.1))])
    assert got[0][1][0] == pytest.approx(0.1, abs=1e-8) and got[0][1][0] != 0.1
    assert isinstance(Constant(1, T.INT).rtype, type(None))  # unstamped nodes carry None
