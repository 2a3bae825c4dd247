"""Namespaced extension functions (cep.catalog.ext): the registry, its positioned errors for
unknown and refused (`geo:`, `#pmml:`) extensions, Java's null and failure rules, and the
batch (columnar) kernels giving exactly the row path's results."""

import math
import random

import pytest

import cep
from cep.catalog import ext
from cep.errors import SiddhiQLError

HEAD = "define stream S (sym string, price double, vol long, n int, f float);\n"


def _rows(plan, events, columnar=False):
    rt = cep.ExecutionPlanRuntime(cep.compile(plan), playback=True)
    got = []
    rt.add_callback("Out", lambda evs: got.extend(evs))
    h = rt.input_handler("S")
    if columnar:
        names = ["sym", "price", "vol", "n", "f"]
        h.send_columns(
            {k: [e[i] for e in events] for i, k in enumerate(names)},
            list(range(1000, 1000 + len(events))),
        )
    else:
        h.send_batch([(1000 + i, tuple(e)) for i, e in enumerate(events)])
    rt.shutdown()
    return [row for _, row in got]


def test_every_namespace_has_its_functions():
    assert {n: len(ext.names(n)) for n in ("str", "math", "regex", "time", "map")} == {
        "str": 19,
        "math": 41,
        "regex": 4,
        "time": 13,
        "map": 9,
    }  # + math:percentile
    assert ext.lookup("str", "concat") is not None
    assert ext.lookup("str", "Concat") is None  # extension names match exactly


def test_a_namespaced_call_types_and_runs():
    plan = HEAD + (
        "from S select str:concat(sym, '-', str:upper(sym)) as c, "
        "math:round(price) as r, str:length(sym) as l insert into Out;"
    )
    compiled = cep.compile(plan)
    out = compiled.stream("Out") if hasattr(compiled, "stream") else None
    assert _rows(plan, [["ab", 2.5, 1, 1, 1.0]]) == [("ab-AB", 3, 2)]
    if out is not None:
        assert [a.type.value for a in out.attributes] == ["string", "long", "int"]


def test_an_unknown_function_of_a_namespace_lists_what_exists():
    with pytest.raises(SiddhiQLError) as info:
        cep.compile(HEAD + "from S\nselect   str:concatt(sym, sym) as c insert into Out;")
    err = info.value
    assert (err.line, err.column) == (3, 10)
    assert "'str:concatt'" in err.message and "concat, contains" in err.message


def test_an_unknown_namespace_lists_the_known_ones():
    with pytest.raises(SiddhiQLError) as info:
        cep.compile(HEAD + "from S select nope:f(sym) as c insert into Out;")
    assert "no extension namespace 'nope'" in info.value.message
    assert "map, math, regex, str, time" in info.value.message


@pytest.mark.parametrize(
    "query,where,word",
    [
        ("from S select geo:geocode(sym) as g insert into Out;", (2, 15), "online"),
        ("from S select geo:reverseGeocode(price, price) as g insert into Out;", (2, 15), "online"),
        (
            "from S#geo:proximity(price, price, sym, 10.0) select sym insert into Out;",
            (2, 7),
            "GPL-licensed geo extension",
        ),
        (
            "from S[geo:within(price, price, sym)] select sym insert into Out;",
            (2, 8),
            "not part of Siddhi 3.2.15",
        ),
        ("from S#pmml:predict('model.pmml') select sym insert into Out;", (2, 7), "PMML"),
        (
            "from S#geodashboard:subscribe() select sym insert into Out;",
            (2, 7),
            "geo dashboard sample",
        ),
        (
            "from S#window.geodashboard:eventsFusion(sym) select sym insert into Out;",
            (2, 7),
            "geo dashboard sample",
        ),
        ("from S[isNull(sym)] select sym insert into Out;", (2, 8), "write `x is null`"),
    ],
)
def test_refused_extensions_say_why_where(query, where, word):
    with pytest.raises(SiddhiQLError) as info:
        cep.compile(HEAD + query)
    assert (info.value.line, info.value.column) == where
    assert word in info.value.message
    assert "not supported" in info.value.message or "Siddhi 3.2 removed" in info.value.message


def test_wrong_argument_types_and_counts_are_positioned_errors():
    with pytest.raises(SiddhiQLError) as info:
        cep.compile(HEAD + "from S select str:length(vol) as c insert into Out;")
    assert info.value.column == 26 and "required STRING, but found LONG" in info.value.message
    with pytest.raises(SiddhiQLError) as info:
        cep.compile(HEAD + "from S select math:abs(price, price) as c insert into Out;")
    assert "takes 1 argument, not 2" in info.value.message
    with pytest.raises(SiddhiQLError) as info:
        cep.compile(HEAD + "from S select time:extract(vol, sym) as c insert into Out;")
    assert "has to be a constant" in info.value.message


def test_a_java_exception_gives_null_and_a_bool_function_false():
    plan = HEAD + (
        "from S select str:charAt(sym, n) as c, str:contains(sym, str:substr(sym, 9)) as k, "
        "math:parseInt(sym) as p insert into Out;"
    )
    assert _rows(plan, [["ab", 1.0, 1, 5, 1.0], ["12", 1.0, 1, 0, 1.0]]) == [
        (None, False, None),
        ("1", False, 12),
    ]


def _random_events(n, seed):
    r = random.Random(seed)
    specials = [
        0.0,
        -0.0,
        math.nan,
        math.inf,
        -math.inf,
        2.5,
        -2.5,
        0.49999999999999994,
        4503599627370497.0,
        1e300,
        1.793,
        1.5000000000000002,
    ]
    out = []
    for _ in range(n):
        sym = r.choice([None, "", "ab", "IBM", "ÄÖü", "x y", "𝔘n"])
        price = r.choice([None, r.uniform(-1e6, 1e6), r.uniform(-3, 3), r.choice(specials)])
        vol = r.choice([None, r.randint(-(2**62), 2**62), r.randint(-5, 5)])
        num = r.choice([None, r.randint(-(2**31), 2**31 - 1)])
        f = r.choice([None, r.uniform(-1e5, 1e5), r.uniform(-3, 3), 2.5, -0.5, 3e10])
        out.append([sym, price, vol, num, f])
    return out


def test_batch_kernels_give_the_row_paths_results():
    plan = HEAD + (
        "from S select str:upper(sym) as u, str:lower(sym) as lo, str:reverse(sym) as rv, "
        "str:length(sym) as l, str:concat(sym, '-', sym) as c, math:abs(price) as a, "
        "math:sqrt(price) as s, math:floor(vol) as fl, math:ceil(price) as ce, "
        "math:signum(n) as sg, math:max(price, vol) as mx, math:min(n, price) as mn, "
        "math:copySign(price, vol) as cs, math:round(price) as rd, math:round(f) as rf "
        "insert into Out;"
    )
    events = _random_events(3000, 11)
    rows, cols = _rows(plan, events), _rows(plan, events, columnar=True)
    assert len(rows) == len(events)
    assert repr(cols) == repr(rows)


def test_the_columnar_kernel_runs_a_str_math_projection(monkeypatch):
    """A columnar batch through a str:/math: projection runs the batch kernels, once per
    batch and function (not once per event)."""
    from cep.catalog.ext import vector

    calls = []
    for key in (("math", "abs"), ("str", "upper")):
        factory = vector.KERNELS[key]

        def counting(types, args, factory=factory, key=key):
            run = factory(types, args)

            def counted(values, nulls, n):
                calls.append((key, n))
                return run(values, nulls, n)

            return counted

        monkeypatch.setitem(vector.KERNELS, key, counting)
    plan = HEAD + "from S select math:abs(price) as a, str:upper(sym) as u insert into Out;"
    events = [["ab", -1.5, 1, 1, 1.0], ["cd", 2.0, 1, 1, 1.0], [None, None, 1, 1, 1.0]]
    assert _rows(plan, events, columnar=True) == [(1.5, "AB"), (2.0, "CD"), (None, None)]
    assert sorted(calls) == [(("math", "abs"), 3), (("str", "upper"), 3)]
