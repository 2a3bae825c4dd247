"""Plan specs from the manager's deployment entries and from compiled plans."""

import pytest

import cep
from cep.model import AttrType
from cep.worker.exceptions import DeploymentFormatError
from cep.worker.plans import spec_from_deployment, spec_from_plan


def test_spec_from_deployment(helpers):
    entry = helpers["stock_entry"](
        version=3, sinks=[{"type": "file", "options": {"path": "x"}, "map": None}]
    )
    spec = spec_from_deployment(entry)
    assert (spec.tenant, spec.name, spec.version) == (-1234, "StockAnalysis", 3)
    (imp,), (exp,) = spec.imported, spec.exported
    assert imp.definition.attribute_names == ("symbol", "price", "volume")
    assert imp.definition.attributes[2].type is AttrType.LONG
    assert exp.specs == ({"type": "file", "options": {"path": "x"}},)
    assert imp.cep_stream == "StockStream:1.0.0"


@pytest.mark.parametrize(
    "mutate, fragment",
    [
        (lambda e: e.pop("name"), "KeyError"),
        (
            lambda e: e["imported"][0].update(attributes=[["a", "decimal"]]),
            "unknown type 'decimal'",
        ),
        (lambda e: e["imported"][0].update(attributes=[["a"]]), "ValueError"),
    ],
)
def test_malformed_deployment_entry(helpers, mutate, fragment):
    entry = helpers["stock_entry"]()
    mutate(entry)
    with pytest.raises(DeploymentFormatError, match=fragment):
        spec_from_deployment(entry)


def test_spec_from_sample_plan_uses_import_export():
    with open("conf/samples/StockAnalysis.siddhiql") as fh:
        spec = spec_from_plan(cep.compile(fh.read()), -1234)
    assert [s.stream for s in spec.imported] == ["StockStream"]
    assert [s.stream for s in spec.exported] == ["HighPriceStream", "AvgPriceStream"]
    assert spec.exported[0].cep_stream == "HighPriceStream:1.0.0"


def test_spec_from_plan_sources_sinks_and_fallbacks():
    plan = cep.compile("""@Plan:name('X')
        @source(type='file', path='/tmp/a.jsonl')
        define stream Inp (a int);
        @sink(type='file', path='/tmp/o.jsonl')
        define stream Outp (a int);
        from Inp[a > 1] select a insert into Outp;
        from Inp select a insert into Other;""")
    spec = spec_from_plan(plan, 1)
    assert [(s.stream, s.specs) for s in spec.imported] == [
        ("Inp", ({"type": "file", "options": {"path": "/tmp/a.jsonl"}},))
    ]
    assert [s.stream for s in spec.exported] == ["Outp"]
    bare = spec_from_plan(
        cep.compile(
            "@Plan:name('Y') define stream Inp (a int); from Inp[a > 1] select a insert into Outp;"
        ),
        1,
    )
    assert ([s.stream for s in bare.imported], [s.stream for s in bare.exported]) == (
        ["Inp"],
        ["Outp"],
    )


def test_source_and_sink_maps_reach_the_worker_from_plans_and_deployments(helpers):
    from manager.worker_view import io_settings

    plan = cep.compiler.compile("""@Plan:name('M')
@source(type='http', @map(type='json', @attributes(symbol='$.s', price='$.p', volume='$.v')))
define stream S (symbol string, price double, volume long);
@sink(type='log', @map(type='xml', @payload('<q>{{symbol}}</q>')))
define stream O (symbol string);
from S select symbol insert into O;""")
    spec = spec_from_plan(plan, -1234)
    (src,), (snk,) = spec.imported[0].specs, spec.exported[0].specs
    assert src["map"]["attributes"] == [["symbol", "$.s"], ["price", "$.p"], ["volume", "$.v"]]
    assert snk["map"] == {
        "type": "xml",
        "options": {},
        "attributes": [],
        "payload": [[None, "<q>{{symbol}}</q>"]],
    }
    view = io_settings(plan.stream("S").annotations[0])
    entry = helpers["stock_entry"](sinks=[io_settings(plan.stream("O").annotations[0])])
    entry["imported"][0]["sources"] = [view]
    got = spec_from_deployment(entry)
    assert got.imported[0].specs[0]["map"] == src["map"]
    assert got.exported[0].specs[0]["map"] == snk["map"]
