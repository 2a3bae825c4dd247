"""Every map type, default and custom, both directions, on payloads written in the CEP 4.0
formats (our own data, not the samples')."""

import pytest

from cep.mapping import MapSpec, MappingConfigError, Schema, input_mapper, output_mapper

QUOTE = Schema.of(
    (
        "StockQuote",
        [
            ("meta_host", "string"),
            ("correlation_id", "long"),
            ("symbol", "string"),
            ("price", "double"),
            ("volume", "long"),
            ("open", "bool"),
        ],
    )
)
EVENTS = [
    (1, ("gw1", 7, "WSO2, Inc", 55.6, 100, True)),
    (2, ("gw2", 8, 'IBM "blue" <big> & co', -1.25, 0, False)),
    (3, ("gw1", 9, "ÉCOLE", 1e-3, 2**40, True)),
]
ROWS = [e[1] for e in EVENTS]
TYPES = ["json", "xml", "text", "csv", "keyvalue", "passThrough"]


@pytest.mark.parametrize("kind", TYPES)
def test_default_format_round_trips_per_event_and_per_batch(kind):
    out, inp = output_mapper(MapSpec(kind), QUOTE), input_mapper(MapSpec(kind), QUOTE)
    per_event = inp.decode(out.encode(EVENTS))
    assert [r for _, r in per_event.pairs] == ROWS and per_event.errors == []
    batch = out.encode_batch(EVENTS)
    decoded = inp.decode(batch if isinstance(batch, list) else [batch])
    assert [r for _, r in decoded.pairs] == ROWS and decoded.errors == []


def test_cep40_json_default_format_is_read():
    text = (
        '{"event": {"metaData": {"host": "gw9"}, "correlationData": {"id": 42}, '
        '"payloadData": {"symbol": "ACME", "price": 12.5, "volume": 300, "open": true}}}'
    )
    got = input_mapper(MapSpec("json"), QUOTE).decode([text.encode()])
    assert [r for _, r in got.pairs] == [("gw9", 42, "ACME", 12.5, 300, True)]


def test_cep40_json_default_output_has_the_three_sections():
    import json

    doc = json.loads(output_mapper(MapSpec("json"), QUOTE).encode(EVENTS[:1])[0])
    assert doc == {
        "event": {
            "metaData": {"host": "gw1"},
            "correlationData": {"id": 7},
            "payloadData": {"symbol": "WSO2, Inc", "price": 55.6, "volume": 100, "open": True},
        }
    }


def test_siddhi4_flat_json_and_xml_events_are_read_too():
    flat = (
        b'{"event": {"meta_host": "h", "correlation_id": 1, "symbol": "S", "price": 1, '
        b'"volume": 2, "open": false}}'
    )
    assert input_mapper(MapSpec("json"), QUOTE).decode([flat]).pairs[0][1] == (
        "h",
        1,
        "S",
        1.0,
        2,
        False,
    )
    xml = (
        b"<events><event><meta_host>h</meta_host><correlation_id>1</correlation_id>"
        b"<symbol>S</symbol><price>1</price><volume>2</volume><open>false</open></event>"
        b"</events>"
    )
    assert input_mapper(MapSpec("xml"), QUOTE).decode([xml]).pairs[0][1] == (
        "h",
        1,
        "S",
        1.0,
        2,
        False,
    )


def test_cep40_xml_default_format_is_read():
    xml = (
        "<events><event><metaData><host>gw3</host></metaData><correlationData><id>5</id>"
        "</correlationData><payloadData><symbol>ACME</symbol><price>9.5</price>"
        "<volume>12</volume><open>true</open></payloadData></event></events>"
    )
    got = input_mapper(MapSpec("xml"), QUOTE).decode([xml])
    assert got.pairs[0][1] == ("gw3", 5, "ACME", 9.5, 12, True)


def test_cep40_text_default_format_is_read_and_written():
    text = "meta_host:gw4,\ncorrelation_id:3,\nsymbol:ACME,\nprice:7.5,\nvolume:9,\nopen:false"
    got = input_mapper(MapSpec("text"), QUOTE).decode([text])
    assert got.pairs[0][1] == ("gw4", 3, "ACME", 7.5, 9, False)
    assert output_mapper(MapSpec("text"), QUOTE).encode([(0, got.pairs[0][1])]) == [text]


# ----------------------------------------------------------------------- custom mappings
PORTFOLIO_JSON = MapSpec(
    "json",
    {"enclosing.element": "$.portfolio.quotes"},
    (
        ("meta_host", "$.src"),
        ("correlation_id", "$.ids[0]"),
        ("symbol", "$.stock['sym']"),
        ("price", "$.stock.price"),
        ("volume", "$.stock.volume"),
        ("open", "$.open"),
    ),
)
JSON_TEMPLATE = MapSpec(
    "json",
    {},
    (),
    (
        (
            None,
            '{"portfolio": {"quotes": [{"src": "{{meta_host}}", "ids": [{{correlation_id}}], '
            '"stock": {"sym": "{{symbol}}", "price": {{price}}, "volume": {{volume}}}, '
            '"open": {{open}}}]}}',
        ),
    ),
)


def test_custom_json_round_trips_through_payload_template_and_jsonpath():
    out = output_mapper(JSON_TEMPLATE, QUOTE)
    got = input_mapper(PORTFOLIO_JSON, QUOTE).decode(out.encode(EVENTS))
    assert [r for _, r in got.pairs] == ROWS and got.errors == []


def test_custom_json_with_wildcard_path_uses_the_full_jsonpath_engine():
    spec = MapSpec("json", {}, (("symbol", "$.legs[*].sym"), ("price", "$..price")))
    schema = Schema.of(("S", [("symbol", "string"), ("price", "double")]))
    got = input_mapper(spec, schema).decode([b'{"legs": [{"sym": "A"}], "x": {"price": 2}}'])
    assert got.pairs[0][1] == ("A", 2.0)


PORTFOLIO_XML = MapSpec(
    "xml",
    {"enclosing.element": "//p:portfolio", "namespaces": "p=urn:test:portfolio"},
    (
        ("meta_host", "@src"),
        ("correlation_id", "p:id"),
        ("symbol", "p:stock/p:sym"),
        ("price", "p:stock/p:price"),
        ("volume", "//p:volume"),
        ("open", "p:open"),
    ),
)
XML_TEMPLATE = MapSpec(
    "xml",
    {"enclosing.element": "p:portfolio"},
    (),
    (
        (
            None,
            '<p:quote xmlns:p="urn:test:portfolio" src="{{meta_host}}"><p:id>{{correlation_id}}</p:id>'
            "<p:stock><p:sym>{{symbol}}</p:sym><p:price>{{price}}</p:price>"
            "<p:volume>{{volume}}</p:volume></p:stock><p:open>{{open}}</p:open></p:quote>",
        ),
    ),
)


def test_custom_xml_round_trips_through_payload_template_and_xpath():
    out = output_mapper(XML_TEMPLATE, QUOTE)
    doc = out.encode_batch(EVENTS).replace(
        "<p:portfolio>", '<p:portfolio xmlns:p="urn:test:portfolio">'
    )
    doc = doc.replace("</p:portfolio>", "</p:portfolio>")
    got = input_mapper(PORTFOLIO_XML, QUOTE).decode([doc])
    assert [r for _, r in got.pairs] == ROWS and got.errors == []
    single = input_mapper(
        MapSpec("xml", {"namespaces": "p=urn:test:portfolio"}, PORTFOLIO_XML.attributes), QUOTE
    )
    got = single.decode(out.encode(EVENTS))  # one event a message, no enclosing element
    assert [r for _, r in got.pairs] == ROWS


def test_custom_text_round_trips_through_template_and_regex_groups():
    out = output_mapper(
        MapSpec(
            "text",
            {},
            (),
            (
                (
                    None,
                    "{{meta_host}}/{{correlation_id}}: {{symbol}} traded {{volume}} at {{price}} "
                    "open={{open}}",
                ),
            ),
        ),
        QUOTE,
    )
    spec = MapSpec(
        "text",
        {"regex.A": r"^(\w+)/(\d+): (.*) traded (\d+) at (\S+)", "regex.B": r"open=(true|false)"},
        (
            ("meta_host", "A[1]"),
            ("correlation_id", "A[2]"),
            ("symbol", "A[3]"),
            ("volume", "A[4]"),
            ("price", "A[5]"),
            ("open", "B[1]"),
        ),
    )
    got = input_mapper(spec, QUOTE).decode(out.encode(EVENTS))
    assert [r for _, r in got.pairs] == ROWS and got.errors == []


def test_grouped_text_batch_is_split_on_the_delimiter_line():
    out = output_mapper(MapSpec("text", {"event.grouping.enabled": "true"}), QUOTE)
    assert out.groups
    got = input_mapper(MapSpec("text"), QUOTE).decode([out.encode_batch(EVENTS)])
    assert [r for _, r in got.pairs] == ROWS


def test_custom_csv_positions_and_keyvalue_keys():
    csv_in = MapSpec(
        "csv",
        {"delimiter": ";", "header.present": "true"},
        (
            ("meta_host", "5"),
            ("correlation_id", "4"),
            ("symbol", "0"),
            ("price", "1"),
            ("volume", "2"),
            ("open", "3"),
        ),
    )
    text = "sym;px;vol;open;id;host\nACME;2.5;10;true;4;gw\nXYZ;3;11;false;5;gw2"
    got = input_mapper(csv_in, QUOTE).decode([text])
    assert [r for _, r in got.pairs] == [
        ("gw", 4, "ACME", 2.5, 10, True),
        ("gw2", 5, "XYZ", 3.0, 11, False),
    ]
    kv_out = output_mapper(
        MapSpec(
            "keyvalue",
            {},
            (),
            (
                ("h", "meta_host"),
                ("c", "{{correlation_id}}"),
                ("s", "symbol"),
                ("p", "price"),
                ("v", "volume"),
                ("o", "open"),
            ),
        ),
        QUOTE,
    )
    kv_in = MapSpec(
        "keyvalue",
        {},
        (
            ("meta_host", "h"),
            ("correlation_id", "c"),
            ("symbol", "s"),
            ("price", "p"),
            ("volume", "v"),
            ("open", "o"),
        ),
    )
    dicts = kv_out.encode(EVENTS)
    assert dicts[0] == {"h": "gw1", "c": 7, "s": "WSO2, Inc", "p": 55.6, "v": 100, "o": True}
    strings = [
        {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in d.items()} for d in dicts
    ]  # as Redis fields or a JMS MapMessage carry them
    assert [r for _, r in input_mapper(kv_in, QUOTE).decode(strings).pairs] == ROWS


# ----------------------------------------------------------------- bad messages, bad maps
@pytest.mark.parametrize(
    "kind,good,bad",
    [
        ("json", b'{"event":{"payloadData":{"symbol":"A","price":1.5}}}', b'{"event": [1'),
        (
            "xml",
            b"<events><event><payloadData><symbol>A</symbol><price>1.5</price></payloadData>"
            b"</event></events>",
            b"<events><event>",
        ),
        ("text", b"symbol:A,\nprice:1.5", b"symbol:A,\nprice:cheap"),
        ("csv", b"A,1.5", b"A"),
        ("keyvalue", b'{"symbol": "A", "price": "1.5"}', b'["not", "a", "map"]'),
        ("passThrough", b'{"data": ["A", 1.5]}', b"{nope"),
    ],
)
def test_an_unreadable_message_is_counted_with_its_reason_and_its_neighbours_go_on(
    kind, good, bad, caplog
):
    schema = Schema.of(("S", [("symbol", "string"), ("price", "double")]))
    mapper = input_mapper(MapSpec(kind), schema)
    got = mapper.decode([good, bad, good])
    assert [r for _, r in got.pairs] == [("A", 1.5), ("A", 1.5)]
    assert [i for i, _ in got.errors] == [1] and got.errors[0][1]
    assert mapper.errors == 1 and mapper.events == 2
    assert any("not read" in r.message for r in caplog.records)


def test_one_bad_event_inside_a_batch_message_keeps_the_others():
    schema = Schema.of(("S", [("symbol", "string"), ("price", "double")]))
    doc = (
        "<events>"
        + "".join(
            f"<event><payloadData><symbol>S{k}</symbol><price>{p}</price></payloadData></event>"
            for k, p in enumerate(["1", "x", "3"])
        )
        + "</events>"
    )
    got = input_mapper(MapSpec("xml"), schema).decode([doc])
    assert [r for _, r in got.pairs] == [("S0", 1.0), ("S2", 3.0)]
    assert "price" in got.errors[0][1]
    arr = (
        b'[{"event":{"symbol":"a","price":1}},{"event":{"symbol":"b"}},'
        b'{"event":{"symbol":"c","price":3}}]'
    )
    got = input_mapper(MapSpec("json"), schema).decode([arr])
    assert [r for _, r in got.pairs] == [("a", 1.0), ("c", 3.0)] and len(got.errors) == 1


def test_missing_attribute_is_null_when_the_map_allows_it():
    schema = Schema.of(("S", [("symbol", "string"), ("price", "double")]))
    spec = MapSpec(
        "json", {"fail.on.missing.attribute": "false"}, (("symbol", "$.s"), ("price", "$.p"))
    )
    assert input_mapper(spec, schema).decode([b'{"s": "A"}']).pairs[0][1] == ("A", None)


@pytest.mark.parametrize(
    "spec,direction,words",
    [
        (MapSpec("yaml"), "in", ["yaml", "json", "xml", "passThrough"]),
        (
            MapSpec("json", {"enclosing.elemnt": "$.x"}),
            "in",
            ["enclosing.elemnt", "enclosing.element"],
        ),
        (MapSpec("json", {}, (("symbol", "$.s"),)), "in", ["price"]),
        (MapSpec("json", {}, (("sym", "$.s"), ("price", "$.p"))), "in", ["sym"]),
        (MapSpec("json", {}, (("symbol", "$.s["), ("price", "$.p"))), "in", ["JSONPath"]),
        (MapSpec("xml", {}, (("symbol", "a[["), ("price", "b"))), "in", ["XPath"]),
        (
            MapSpec("text", {"regex.A": "(x"}, (("symbol", "A[1]"), ("price", "A[1]"))),
            "in",
            ["regex.A"],
        ),
        (
            MapSpec("text", {"regex.A": "(x)"}, (("symbol", "B[1]"), ("price", "A[2]"))),
            "in",
            ["regex.B"],
        ),
        (MapSpec("text", {}, (), ((None, "{{symbol}} {{nosuch}}"),)), "out", ["nosuch"]),
        (MapSpec("json", {}, (("symbol", "$.s"), ("price", "$.p"))), "out", ["@payload"]),
    ],
)
def test_a_bad_map_is_refused_when_built_naming_what_is_wrong(spec, direction, words):
    schema = Schema.of(("S", [("symbol", "string"), ("price", "double")]))
    build = input_mapper if direction == "in" else output_mapper
    with pytest.raises(MappingConfigError) as err:
        build(spec, schema)
    for w in words:
        assert w in str(err.value)


def test_map_spec_from_annotation_and_its_json_form():
    from cep.compiler import compile as compile_plan

    plan = compile_plan("""@Plan:name('P')
@source(type='http', port='0', @map(type='json', enclosing.element='$.q',
        @attributes(symbol='$.s', price='$.p')))
define stream S (symbol string, price double);
from S select * insert into O;""")
    ann = plan.stream("S").annotations[0].annotations[0]
    spec = MapSpec.from_annotation(ann)
    assert spec.type == "json" and spec.options == {"enclosing.element": "$.q"}
    assert spec.attributes == (("symbol", "$.s"), ("price", "$.p"))
    assert MapSpec.from_dict(spec.to_dict()) == spec


def test_a_message_holding_two_json_values_is_not_read_as_two_messages():
    schema = Schema.of(("S", [("symbol", "string"), ("price", "double")]))
    good = b'{"event":{"symbol":"a","price":1}}'
    got = input_mapper(MapSpec("json"), schema).decode([good + b"," + good, good])
    assert [i for i, _ in got.errors] == [0] and len(got.pairs) == 1
