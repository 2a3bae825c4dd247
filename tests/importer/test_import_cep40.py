"""`cep import` on a CEP 4.0 style deployment written for these tests (tests/importer/data):
receivers and publishers become @source/@sink with their mappings on the plan's imported and
exported streams, @Import/@Export and stream versions stay, unsupported adapters are error
lines naming file and element, `--check` writes nothing, a .car archive reads the same, and
`--deploy` adds the plans to a served manager."""

import shutil
import threading
import zipfile
from pathlib import Path

import pytest

import cep
from cep.cli.main import main
from cep.importer import import_deployment
from cep.mapping import MapSpec, input_mapper, output_mapper

DATA = Path(__file__).parent / "data" / "acme_deployment"


def annotations(plan, stream, name):
    return [a for a in plan.stream(stream).annotations if a.matches(name)]


def test_receivers_and_publishers_become_sources_and_sinks_with_their_maps():
    result = import_deployment(DATA)
    (imported,) = result.plans
    assert imported.name == "AcmeAlerts" and imported.valid
    plan = cep.compile(imported.text)
    assert plan.stream("quotes").annotations[0].value == "org.acme.Quote:1.0.0"  # @Import kept
    assert annotations(plan, "alerts", "Export")[0].value == "org.acme.Alert:1.0.0"
    sources = {a.get("type"): a for a in annotations(plan, "quotes", "source")}
    sinks = {a.get("type"): a for a in annotations(plan, "alerts", "sink")}
    assert set(sources) == {"http", "file", "jms"} and set(sinks) == {"log", "http", "jms"}
    assert sources["file"].get("path") == "/var/acme/quotes.log"
    assert sources["jms"].get("destination") == "AcmeQuotes"
    assert sources["jms"].get("transport.jms.Password") is None  # no secret in the plan
    assert sinks["http"].get("publisher.url") == "http://alerts.acme.example:8280/hook"
    assert "s3cret" not in imported.text and "hunter2" not in imported.text


def _map(annotation):
    return MapSpec.from_annotation(annotation.annotations[0])


def test_the_converted_maps_read_and_write_what_the_cep40_artifacts_describe():
    plan = cep.compile(import_deployment(DATA).plans[0].text)
    quotes, alerts = plan.stream("quotes"), plan.stream("alerts")
    sources = {a.get("type"): _map(a) for a in annotations(plan, "quotes", "source")}
    row = ("gw7", "ACME", 120.5, 30)
    got = input_mapper(sources["http"], quotes).decode(
        [b'{"source": {"gw": "gw7"}, "quote": {"ticker": "ACME", "last": 120.5, "qty": 30}}']
    )
    assert got.pairs[0][1] == row
    got = input_mapper(sources["file"], quotes).decode(["gw=gw7 ACME traded 30 @ 120.5"])
    assert got.pairs[0][1] == row
    xml = (
        '<msg xmlns:aq="urn:acme:quotes"><aq:batch><q gw="gw7"><aq:sym>ACME</aq:sym>'
        '<aq:px>120.5</aq:px><aq:vol>30</aq:vol></q><q gw="gw8"><aq:sym>B</aq:sym>'
        "<aq:px>1</aq:px></q></aq:batch></msg>"
    )
    got = input_mapper(sources["jms"], quotes).decode([xml])
    assert [p[1] for p in got.pairs] == [row, ("gw8", "B", 1.0, None)]  # default dropped: null
    sinks = {a.get("type"): _map(a) for a in annotations(plan, "alerts", "sink")}
    out = [(0, ("ACME", 120.5))]
    assert output_mapper(sinks["log"], alerts).encode(out) == ["symbol:ACME,\nprice:120.5"]
    assert output_mapper(sinks["http"], alerts).encode(out) == [
        '<alert xmlns="urn:acme:alerts"><ticker>ACME</ticker><at>120.5</at></alert>'
    ]
    assert output_mapper(sinks["jms"], alerts).encode(out) == [{"ticker": "ACME", "limit": 120.5}]


def test_unsupported_adapters_and_dropped_properties_are_reported_with_file_and_element():
    lines = [str(p) for p in import_deployment(DATA).problems]
    assert any(
        line.startswith(
            "error: eventreceivers/QuoteSoap.xml: eventReceiver 'QuoteSoap' "
            "<from eventAdapterType='soap'>: adapter 'soap' is not "
            "supported"
        )
        for line in lines
    )
    assert any(
        line.startswith("error: eventpublishers/AlertSms.xml: eventPublisher 'AlertSms'")
        and "'sms' is not supported"
        for line in lines
    )
    assert any(
        "QuoteJmsXml.xml" in line
        and "transport.jms.Password" in line
        and "connection='name'" in line
        for line in lines
    )
    assert any("UnusedPublisher.xml" in line and "org.acme.Nothing:2.0.0" in line for line in lines)
    assert any("QuoteJmsXml.xml" in line and "default value '0'" in line for line in lines)


def test_check_writes_nothing_and_import_writes_the_plans(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["import", str(DATA), "--check", "--out", str(out)]) == 1  # two errors
    text = capsys.readouterr().out
    assert (
        "plan AcmeAlerts from executionplans/AcmeAlerts.siddhiql: 3 source(s), 3 sink(s)" in text
        and "(check only)" in text
        and not out.exists()
    )
    assert main(["import", str(DATA), "--out", str(out)]) == 1
    written = (out / "AcmeAlerts.siddhiql").read_text()
    assert written == import_deployment(DATA).plans[0].text
    cep.compile(written)


def test_a_car_archive_imports_like_the_folder(tmp_path):
    car = tmp_path / "acme.car"
    with zipfile.ZipFile(car, "w") as zf:  # a CAR keeps each artifact in a folder of its own
        zf.writestr("artifacts.xml", "<artifacts/>")
        for f in DATA.rglob("*"):
            if f.is_file():
                zf.write(f, f"{f.stem}_1.0.0/{f.name}")
                zf.writestr(f"{f.stem}_1.0.0/artifact.xml", f"<artifact name='{f.stem}'/>")
    from_car, from_dir = import_deployment(car), import_deployment(DATA)
    assert [p.text for p in from_car.plans] == [p.text for p in from_dir.plans]
    assert len(from_car.errors) == len(from_dir.errors) == 2


def test_a_deployment_with_only_supported_adapters_imports_without_errors(tmp_path, capsys):
    clean = tmp_path / "clean"
    shutil.copytree(DATA, clean)
    (clean / "eventreceivers" / "QuoteSoap.xml").unlink()
    (clean / "eventpublishers" / "AlertSms.xml").unlink()
    assert main(["import", str(clean), "--out", str(tmp_path / "o")]) == 0
    assert "0 error(s)" in capsys.readouterr().out


@pytest.fixture
def served(tmp_path, monkeypatch):
    from werkzeug.serving import make_server

    from manager.server import Manager
    from manager.settings import load_manager_settings
    from manager.web import create_app
    from tests.auth_helpers import admin_token
    from tests.manager.manager_fakes import FakeLauncher

    settings = load_manager_settings(
        overrides={
            "manager.data_dir": str(tmp_path / "mgr"),
            "registry.port": 0,
            "registry.bind_host": "127.0.0.1",
            "manager.advertised_host": "127.0.0.1",
            # the host policy: the deployment's file path and HTTP host are the operator's to allow
            "files.roots": ["/var/acme"],
            "sinks.http_allow": ["127.0.0.1"],
        },
        env={},
    )
    manager = Manager(settings, launcher=FakeLauncher()).start()
    server = make_server("127.0.0.1", 0, create_app({"MANAGER": manager}), threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("CEP_TOKEN", admin_token(manager))
    yield f"http://127.0.0.1:{server.server_port}", manager
    server.shutdown()
    manager.stop()


def test_deploy_adds_the_imported_plans_to_the_manager(served, tmp_path, capsys):
    url, manager = served
    clean = tmp_path / "clean"
    shutil.copytree(DATA, clean)
    (clean / "eventreceivers" / "QuoteSoap.xml").unlink()
    (clean / "eventpublishers" / "AlertSms.xml").unlink()
    # a broker receiver needs a connection the operator names (connections.brokers);
    # this manager has none, so the JMS receiver and publisher stay out of the deployed plan
    (clean / "eventreceivers" / "QuoteJmsXml.xml").unlink()
    (clean / "eventpublishers" / "AlertJmsMap.xml").unlink()
    hook = clean / "eventpublishers" / "AlertHttpXml.xml"  # a host this machine resolves
    hook.write_text(hook.read_text().replace("alerts.acme.example", "127.0.0.1"))
    code = main(["import", str(clean), "--out", str(tmp_path / "o"), "--deploy", "--manager", url])
    out = capsys.readouterr().out
    assert code == 0 and "deployed AcmeAlerts: topology AcmeAlerts[-1234]" in out, out
    stored = main(["plan", "--manager", url, "show", "AcmeAlerts"])
    shown = capsys.readouterr().out
    assert (
        stored == 0
        and "@source(type='http'" in shown
        and "@Import('org.acme.Quote:1.0.0')" in shown
    )


def test_cep3_artifacts_are_reported_not_silently_skipped(tmp_path):
    old = tmp_path / "dep"
    shutil.copytree(DATA, old)
    (old / "eventbuilders").mkdir()
    (old / "eventbuilders" / "Old.xml").write_text(
        '<eventBuilder name="Old" xmlns="http://wso2.org/carbon/eventbuilder"/>'
    )
    lines = [str(p) for p in import_deployment(old).problems]
    assert any(
        line.startswith("warning: eventbuilders/Old.xml: eventBuilder: a CEP 3.x") for line in lines
    )
