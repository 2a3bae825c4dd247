"""The reference pages the site build writes from the code (docs/_hooks/reference_pages.py):
the real site is built with `mkdocs build --strict`, and each page is compared with the live
definitions, found here on their own (not through the generator), so a page that drops a
setting, a command, a catalog entry or a route fails: configuration keys (every Schema in the
sources), the command line (argparse), SiddhiQL (cep/catalog) and REST (the OpenAPI file)."""

import argparse
import importlib
import json
import re
from pathlib import Path

import pytest
import yaml

from tests.docs_site_helpers import (
    ROOT,
    build_docs_site,
    cell_codes,
    import_hook_modules,
    page_tables,
)

import_hook_modules()

from refgen import DefinitionError, settings_page  # noqa: E402
from refgen.cli_page import help_environment  # noqa: E402
from refgen.signatures import fold, probe  # noqa: E402

SCHEMA = re.compile(r"^(\w+) = Schema\(\s*\"(\w+)\"", re.M)  # formatted on one line or two


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    return build_docs_site(tmp_path_factory.mktemp("site"))


def text(td) -> str:
    return " ".join(td.text_content().split())


def every_schema():
    """Every settings definition in the sources (`NAME = Schema("name", [...])` at module
    level), imported: the generator lists its own, this finds them all."""
    found = []
    for folder in ("cep", "manager", "topology", "receivers", "publishers", "connectors"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for attribute, name in SCHEMA.findall(path.read_text(encoding="utf-8")):
                module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
                found.append(getattr(importlib.import_module(module), attribute))
    assert {s.name for s in found} >= {"manager", "worker", "spark"}
    return found


def test_configuration_page_lists_every_setting_with_its_type_default_and_env_var(site):
    rows: dict[str, dict[str, list]] = {}
    for h2, _, table_rows in page_tables(site / "reference" / "configuration.html"):
        for tds in table_rows:
            key, env_var = cell_codes(tds[0])
            rows.setdefault(h2, {})[key] = [env_var, cell_codes(tds[1]), text(tds[2])]
    for schema in every_schema():
        page = rows.get(schema.name)
        assert page is not None, f"no section for conf/{schema.name}.yaml"
        assert set(page) == set(schema.settings), f"conf/{schema.name}.yaml"
        for name, setting in schema.settings.items():
            env_var, type_and_default, doc = page[name]
            assert env_var == setting.env_var
            assert type_and_default[0] == setting.type.__name__
            assert type_and_default[-1] == json.dumps(setting.default)
            assert [str(c) for c in setting.choices] == type_and_default[1:-1]
            assert doc == " ".join(setting.doc.replace("`", "").split()), name


def test_a_setting_without_a_description_fails_the_build_naming_it(monkeypatch):
    from cep.protocol.settings import Schema, Setting
    import reference_pages

    bad = Schema(
        "worker",
        [
            Setting("wal", "enabled", bool, True, "logged"),
            Setting("wal", "segment_bytes", int, 1, "  "),
        ],
    )
    source = settings_page.SchemaSource("cep.worker.config", "WORKER_SCHEMA", "Workers", "x")
    monkeypatch.setattr(settings_page.SchemaSource, "schema", lambda self: bad)
    monkeypatch.setattr(settings_page, "SCHEMAS", (source,))
    with pytest.raises(DefinitionError) as err:
        settings_page.render()
    message = str(err.value)
    assert "wal.segment_bytes of conf/worker.yaml" in message and "has none" in message
    assert "cep/worker/config.py" in message  # where its Setting(...) is
    # the hook turns it into an error that stops `mkdocs build`
    from mkdocs.exceptions import PluginError

    monkeypatch.setattr(
        reference_pages, "generated", lambda: {"reference/configuration.md": settings_page.render}
    )
    with pytest.raises(PluginError, match="reference/configuration.md: .*wal.segment_bytes"):
        reference_pages.on_files(None, None)


def every_parser(parser, out=None):
    out = [] if out is None else out
    out.append(parser)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                every_parser(sub, out)
    return out


def test_cli_page_shows_every_command_help_as_the_parser_prints_it(site):
    import lxml.html
    from cep.cli.main import build_parser

    article = lxml.html.parse(str(site / "reference" / "cli.html")).getroot().xpath("//article")[0]
    with help_environment():
        parsers = every_parser(build_parser())
        for parser in parsers:
            heading = article.xpath(f".//*[@id='{parser.prog.replace(' ', '-')}']")
            assert heading, f"no section for {parser.prog}"
            shown = heading[0].xpath("following-sibling::*[1]")[0].text_content()
            assert shown.rstrip("\n") == parser.format_help().rstrip("\n"), parser.prog
    assert len(article.xpath(".//h2|.//h3")) == len(parsers)
    assert len(parsers) > 30 and any(p.prog == "cep plan add" for p in parsers)


def test_every_command_summary_is_a_whole_sentence():
    """`cep --help` lists each command with its summary; one cut at a line end (a docstring's
    first line) reads as a broken sentence."""
    from cep.cli.main import build_parser

    for parser in every_parser(build_parser()):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for choice in action._choices_actions:
                    if parser.prog == "cep":
                        assert choice.help.rstrip().endswith("."), (choice.dest, choice.help)


def catalog_rows(site):
    """{(h2, h3): {first code of the row: row cells}} of the SiddhiQL page."""
    out: dict[tuple[str, str], dict[str, list]] = {}
    for h2, h3, rows in page_tables(site / "reference" / "siddhiql.html"):
        for tds in rows:
            out.setdefault((h2, h3), {})[cell_codes(tds[0])[0]] = tds
    return out


def test_siddhiql_page_lists_every_builtin_with_types_and_status(site):
    from cep.catalog.aggregators import AGGREGATORS
    from cep.catalog.functions import FUNCTIONS
    from cep.catalog.windows import WINDOWS
    from cep.compiler.input_checks import STREAM_FUNCTIONS

    rows = catalog_rows(site)
    assert set(rows["functions", ""]) == set(FUNCTIONS)
    assert set(rows["aggregators", ""]) == set(AGGREGATORS)
    assert {n.split("(")[0] for n in rows["windows", ""]} == {f"#window.{w}" for w in WINDOWS}
    assert set(rows["stream-functions", ""]) == {f"#{f}" for f in STREAM_FUNCTIONS}
    for table in ("functions", "aggregators", "windows"):
        for name, tds in rows[table, ""].items():
            assert text(tds[1]) and text(tds[1]) != "(none)", name  # a signature
            assert text(tds[2]), f"{name} has no description"
            assert text(tds[3]) == "supported"
    # the types are the type rules' (Siddhi's): sum widens, avg is a double, count a long
    assert cell_codes(rows["aggregators", ""]["sum"][1]) == [
        "(int|long) -> long",
        "(float|double) -> double",
    ]
    assert cell_codes(rows["aggregators", ""]["avg"][1]) == ["(number) -> double"]
    assert cell_codes(rows["functions", ""]["ifThenElse"][1]) == [
        "(bool|object, T, T) -> T, T: any"
    ]
    assert cell_codes(rows["functions", ""]["convert"][1]) == ["(any, string) -> set by a constant"]


def test_siddhiql_page_lists_every_extension_with_types_and_status(site):
    from cep.catalog import ext, ext_processors
    from cep.catalog.ext.aggregators import AGGREGATORS as EXT_AGGREGATORS
    from cep.catalog.ext.vector import KERNELS

    ext_processors._load_functions()
    rows = catalog_rows(site)
    expected = {ns: {f"{ns}:{n}" for n in ext.names(ns)} for ns in ext.MODULES}
    for ns, name in ext_processors.FUNCTIONS:
        expected.setdefault(ns, set()).add(f"{ns}:{name}")
    for ns, names in expected.items():
        page = rows.get(("extensions", f"ext-{ns}"))
        assert page is not None, f"no table of the {ns}: functions"
        assert set(page) == names
        for full, tds in page.items():
            assert text(tds[1]) and text(tds[1]) != "(none)", full
            assert text(tds[2]), f"{full} has no description"
            kernel = tuple(full.split(":")) in KERNELS
            assert text(tds[3]) == ("supported (batch kernel)" if kernel else "supported")
    assert cell_codes(rows["extensions", "ext-math"]["math:round"][1]) == [
        "(float) -> int",
        "(double) -> long",
    ]
    assert cell_codes(rows["extensions", "ext-str"]["str:length"][1]) == ["(string) -> int"]
    assert set(rows["extensions", "ext-aggregators"]) == {f"{ns}:{n}" for ns, n in EXT_AGGREGATORS}
    assert set(rows["extensions", "ext-stream-processors"]) == {
        f"#{e.full_name}" for e in ext_processors.STREAM_PROCESSORS.values() if e.origin == "siddhi"
    }
    refused = " ".join(
        text(tds[0]) + " " + text(tds[1]) for tds in rows["extensions", "refused"].values()
    )
    for ns, why in ext.REFUSED.items():
        assert f"{ns}:" in refused and " ".join(why.split()) in refused


def test_rest_page_lists_every_route_of_the_openapi_document(site):
    document = yaml.safe_load((ROOT / "manager" / "web" / "openapi.yaml").read_text())
    routes = {}
    for _, _, rows in page_tables(site / "reference" / "rest.html"):
        for tds in rows:
            routes[text(tds[0])] = text(tds[1])
    expected = {
        f"{method.upper()} {path}": op.get("summary", "")
        for path, item in document["paths"].items()
        for method, op in item.items()
        if method != "parameters"
    }
    assert set(routes) == set(expected)
    for route, summary in expected.items():
        assert routes[route].startswith(" ".join(summary.split())), route
    assert routes["POST /api/v1/login"].endswith("credentials: none")
    # the document itself is in the site, as the manager serves it (GET /api/v1/openapi.json)
    assert json.loads((site / "reference" / "openapi.json").read_text()) == document
    assert 'href="openapi.json"' in (site / "reference" / "rest.html").read_text()


def test_reference_pages_are_in_the_nav_and_linked_from_the_reference(site):
    reference = (site / "reference.html").read_text()
    for page in ("cli", "rest", "configuration", "siddhiql"):
        assert (site / "reference" / f"{page}.html").exists()
        assert f'href="reference/{page}.html"' in reference, page


def test_signatures_fold_what_a_type_rule_accepts():
    """The folding on rules of known shape: one type for all arguments, a constant-only
    argument, a result that depends on a constant's value."""
    from cep.errors import TypeMismatchError
    from cep.model import AttrType, Constant

    numbers = (AttrType.INT, AttrType.LONG, AttrType.FLOAT, AttrType.DOUBLE)

    def same_number(types, call):
        if any(t not in numbers for t in types) or len(set(types)) > 1:
            raise TypeMismatchError("no", None)
        return types[0]

    def shift(types, call):  # (string|long, constant int unit) -> string
        if (
            types[0] not in (AttrType.STRING, AttrType.LONG)
            or types[1] is not AttrType.INT
            or not isinstance(call.args[1], Constant)
        ):
            raise TypeMismatchError("no", None)
        return AttrType.STRING

    def named(types, call):  # convert-like: the constant names the result type
        if types[1] is not AttrType.STRING or not isinstance(call.args[1], Constant):
            raise TypeMismatchError("no", None)
        try:
            return AttrType(call.args[1].value)
        except ValueError:
            raise TypeMismatchError("no", None) from None

    def rows(rule, low, high):
        return [str(r) for r in fold(probe(rule, "f", None, low, high), low, high)]

    assert rows(same_number, 2, 2) == ["(T, T) -> T, T: number"]
    assert rows(same_number, 1, None) == [
        "(T) -> T, T: number",
        "(T, T) -> T, T: number",
        "(T, T, T, ...) -> T, T: number",
    ]
    assert rows(shift, 2, 2) == ["(string|long, int) -> string"]
    assert rows(named, 2, 2) == ["(any, string) -> set by a constant"]
