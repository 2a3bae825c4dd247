"""Unknown @source/@sink/@map types and unknown or missing options are positioned errors that
list what exists (cep/connectors.py, cep/mapping): at compile time, so `cep validate`, the
manager's plan add and its validation endpoint (the console editor's) all refuse them."""

import pytest

import cep
from cep.cli.main import main
from cep.connectors import SINKS, SOURCES
from cep.errors import AnnotationError

TAIL = "define stream O (a int);\nfrom S select a insert into O;\n"


def plan(source="", sink=""):
    return (
        f"@Plan:name('P')\n{source}define stream S (a int, b string);\n{sink}"
        f"define stream O (a int);\nfrom S select a insert into O;\n"
    )


@pytest.mark.parametrize(
    "text,line,column,words",
    [
        (
            plan(source="@source(type='carrierpigeon', @map(type='yaml'))\n"),
            2,
            1,
            ["carrierpigeon", "known: ", "http", "zmq", "file", "nats", "kafka"],
        ),
        (
            plan(source="@source(type='http',\n        @map(type='yaml'))\n"),
            3,
            9,
            ["yaml", "json", "xml", "text", "csv", "keyvalue", "passThrough"],
        ),
        (plan(sink="@sink(type='nosuch')\n"), 3, 1, ["nosuch", "log", "redis", "rdbms"]),
        (plan(sink="@sink(type='file', pth='/tmp/x')\n"), 3, 1, ["'pth'", "path", "append"]),
        (plan(sink="@sink(type='file')\n"), 3, 1, ["needs path="]),
        (plan(sink="@sink(type='http')\n"), 3, 1, ["publisher.url=... or url="]),
        (
            plan(
                source="@source(type='zmq', url='tcp://127.0.0.1:0', "
                "@map(type='json', enclosing.elemnt='$.x'))\n"
            ),
            2,
            46,
            ["enclosing.elemnt", "enclosing.element", "fail.on.missing.attribute"],
        ),
        (
            plan(source="@source(type='http', @map(type='json', @attributes(a='$.a')))\n"),
            2,
            22,
            ["b"],
        ),
        (
            plan(sink="@sink(type='log', @map(type='text', @payload('{{zz}}')))\n"),
            3,
            19,
            ["{{zz}}", "(a)"],
        ),
        (plan(sink="@sink(type='kafka', bootstrap.servers='h:9092')\n"), 3, 1, ["topic="]),
        (plan(sink="@sink(type='rdbms', datasource='d')\n"), 3, 1, ["needs table.name="]),
        (
            plan(sink="@sink(type='rdbms', table.name='T', mode='upsert')\n"),
            3,
            1,
            ["mode='upsert' needs on.key="],
        ),
        (
            plan(sink="@sink(type='rdbms', table.name='T', mode='upsert', on.key='c')\n"),
            3,
            1,
            ["on.key names 'c'", "(a)"],
        ),
        (
            plan(sink="@sink(type='rdbms', table.name='T', mode='replace')\n"),
            3,
            1,
            ["mode='replace'", "insert, upsert"],
        ),
        (
            plan(sink="@sink(type='rdbms', table.name='T', password='x')\n"),
            3,
            1,
            ["no option 'password'", "datasource"],
        ),
        (
            plan(sink="@sink(type='rdbms', table.name='T', @map(type='json'))\n"),
            3,
            37,
            ["one column per attribute", "no @map"],
        ),
    ],
)
def test_bad_connector_or_map_is_a_positioned_error(text, line, column, words):
    with pytest.raises(AnnotationError) as err:
        cep.compile(text)
    assert (err.value.line, err.value.column) == (line, column), err.value
    for w in words:
        assert w in err.value.message, (w, err.value.message)


def test_every_registered_type_with_its_required_options_compiles():
    for table, direction in ((SOURCES, "source"), (SINKS, "sink")):
        for kind, entry in table.items():
            opts = "".join(f", {group[0]}='x'" for group in entry.required)
            text = plan(**{direction: f"@{direction}(type='{kind}'{opts})\n"})
            cep.compile(text)  # no error: the broker types are known by name


def test_good_maps_compile():
    cep.compile(
        plan(
            source="@source(type='http', @map(type='xml', "
            "enclosing.element='//q', @attributes(a='x', b='@y')))\n",
            sink="@sink(type='file', path='o', @map(type='json', @payload('{\"v\": {{a}}}')))\n",
        )
    )


def test_cep_validate_reports_the_position_and_the_known_types(tmp_path, capsys):
    path = tmp_path / "p.siddhiql"
    path.write_text(plan(source="@source(type='carrierpigeon', @map(type='yaml'))\n"))
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}:2:1: AnnotationError:" in err and "carrierpigeon" in err and "zmq" in err


def test_a_good_rdbms_sink_compiles():
    cep.compile(
        plan(
            sink="@sink(type='rdbms', datasource='orders', table.name='Latest', "
            "mode='upsert', on.key='a', max.pending='10', retry.interval='0.5', "
            "@map(type='passThrough'))\n"
        )
    )
