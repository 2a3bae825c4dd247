"""The catalog: one entry per function, aggregator and window, read by both the compiler and
the engine; the engine never imports the compiler."""

import ast
import pathlib

import pytest

import cep
from cep.catalog import aggregators, functions, rules, windows
from cep.compiler.scope import AttributeScope
from cep.compiler.types import expression_type
from cep.engine.expressions import SingleStreamScope, compile_expression
from cep.engine.windows import WindowProcessor
from cep.errors import TypeMismatchError
from cep.model import Attribute, AttrType as T, StreamDefinition
from tests.cep.engine.helpers import collect, runtime

ROOT = pathlib.Path(cep.__file__).parent
DEF = StreamDefinition(
    "S",
    tuple(
        Attribute(n, t)
        for n, t in (
            ("i", T.INT),
            ("l", T.LONG),
            ("f", T.FLOAT),
            ("d", T.DOUBLE),
            ("s", T.STRING),
            ("b", T.BOOL),
        )
    ),
)
# a sample call of every function, in select syntax
CALLS = {
    "coalesce": "coalesce(d, 1.5)",
    "default": "default(i, 3)",
    "convert": "convert(s, 'long')",
    "cast": "cast(d, 'int')",
    "ifThenElse": "ifThenElse(b, s, 'x')",
    "maximum": "maximum(i, 3, 4)",
    "minimum": "minimum(f, 2.5f)",
    "UUID": "UUID()",
    "currentTimeMillis": "currentTimeMillis()",
    "eventTimestamp": "eventTimestamp()",
    "instanceOfBoolean": "instanceOfBoolean(b)",
    "instanceOfDouble": "instanceOfDouble(d)",
    "instanceOfFloat": "instanceOfFloat(i)",
    "instanceOfInteger": "instanceOfInteger(i)",
    "instanceOfLong": "instanceOfLong(l)",
    "instanceOfString": "instanceOfString(s)",
}


def _imports(path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.module


@pytest.mark.parametrize("package", ["engine", "catalog"])
def test_the_engine_and_the_catalog_never_import_the_compiler(package):
    found = [
        f"{p.relative_to(ROOT)}: {m}"
        for p in sorted((ROOT / package).rglob("*.py"))
        for m in _imports(p)
        if m == "cep.compiler" or m.startswith("cep.compiler.")
    ]
    assert found == []


def test_every_function_has_a_sample_and_one_type_in_compiler_and_engine():
    assert set(CALLS) == set(functions.FUNCTIONS)
    items = ", ".join(f"{c} as x{n}" for n, c in enumerate(CALLS.values()))
    plan = cep.compile(
        "define stream S (i int, l long, f float, d double, s string, b bool);\n"
        f"from S select {items} insert into Out;"
    )
    compiler_scope = AttributeScope(("S",), DEF.attributes, "stream 'S'")
    engine_scope = SingleStreamScope(DEF)
    for item in plan.elements[0].selector.attributes:
        expr = item.expression
        assert compile_expression(expr, engine_scope).type == expression_type(
            expr, compiler_scope
        ), expr.name


def test_one_rule_rejects_bad_calls_in_both():
    text = "define stream S (s string);\nfrom S select maximum(s, s) as m insert into Out;"
    with pytest.raises(TypeMismatchError, match="maximum not supported for string"):
        cep.compile(text)
    expr = cep.parse(text).elements[0].selector.attributes[0].expression  # not validated
    scope = SingleStreamScope(StreamDefinition("S", (Attribute("s", T.STRING),)))
    with pytest.raises(TypeMismatchError, match="maximum not supported for string"):
        compile_expression(expr, scope)


def test_every_aggregator_runs_with_the_catalogs_result_type():
    names = sorted(aggregators.AGGREGATORS)
    args = {"count": ""}
    select = ", ".join(f"{n}({args.get(n, 'i')}) as {n}" for n in names)
    rt = runtime(
        f"@Plan:playback\ndefine stream S (i int);\n"
        f"from S#window.length(2) select {select} insert into Out;"
    )
    got = collect(rt, ["Out"])
    for ts, v in ((1, 4), (2, 2), (3, 6)):
        rt.input_handler("S").send((v,), ts)
    out = rt.junctions["Out"].definition
    rt.shutdown()
    want = {n: aggregators.AGGREGATORS[n].rule([T.INT], None) for n in names}
    assert {a.name: a.type for a in out.attributes} == want
    last = dict(zip(names, got["Out"][-1][1]))
    assert (
        last["sum"],
        last["count"],
        last["min"],
        last["max"],
        last["minForever"],
        last["maxForever"],
        last["distinctcount"],
        last["avg"],
    ) == (8, 2, 2, 6, 2, 6, 2, 4.0)
    assert last["stddev"] == pytest.approx(2.0)


def test_every_window_entry_names_the_engine_class_that_implements_it():
    classes = {name: entry.processor_class() for name, entry in windows.WINDOWS.items()}
    assert all(issubclass(c, WindowProcessor) for c in classes.values())
    assert len(set(classes.values())) == len(classes)  # one class per window
    assert classes["length"].__name__ == "LengthWindow"
    assert classes["uniqueExternalTimeBatch"].__name__ == "UniqueExternalTimeBatchWindow"


def test_names_match_case_sensitively_past_the_first_letter():
    assert rules.lookup(functions.FUNCTIONS, "IfThenElse").name == "ifThenElse"
    assert aggregators.lookup("Sum").name == "sum"
    assert aggregators.lookup("sUm") is None and aggregators.lookup("sum", "ns") is None
    assert windows.lookup("Length").name == "length"
