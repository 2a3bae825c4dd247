"""`cep feed` sends a CEP 4.0 event simulator file (a CSV and its stream configuration XML)
to a standalone worker running a plan that imports the CEP stream: the worker reads the lines
with the stream's types (`?map=csv`), rejects the bad line with its reason, and the plan's
output holds what the good lines produce."""

import shutil
from pathlib import Path

import pytest

from cep.cli.main import main
from receivers.cep40_feed import FeedFileError, load_feed
from tests.worker.test_worker_standalone import make_worker, read_lines, wait_for

DATA = Path(__file__).parent / "data" / "cep40_feed"
PLAN = """@Plan:name('AcmeAlerts')
@Import('org.acme.Quote:1.0.0')
define stream quotes (meta_gateway string, symbol string, price double, volume long);
@Export('org.acme.Alert:1.0.0')
define stream alerts (symbol string, price double);
from quotes[price > 100.0] select symbol, price insert into alerts;
"""


def test_load_feed_reads_the_csv_and_its_configuration():
    by_csv, by_xml = (
        load_feed(DATA / "quotes.csv"),
        load_feed(DATA / "quotes_streamConfiguration.xml"),
    )
    assert by_csv == by_xml
    assert (by_csv.stream_id, by_csv.separator, by_csv.delay_ms) == (
        "org.acme.Quote:1.0.0",
        ",",
        10,
    )
    assert by_csv.lines[0] == "gw1,ACME,120.5,30" and len(by_csv.lines) == 4


def test_a_csv_without_configuration_is_a_clear_error(tmp_path):
    shutil.copy(DATA / "quotes.csv", tmp_path / "quotes.csv")
    with pytest.raises(FeedFileError, match="no stream configuration XML"):
        load_feed(tmp_path / "quotes.csv")


def test_cep_feed_sends_a_cep40_simulator_file_through_a_running_plan(tmp_path, capsys):
    plan = tmp_path / "acme.siddhiql"
    plan.write_text(PLAN)
    w = make_worker(tmp_path, [str(plan)]).start()
    try:
        assert wait_for(lambda: "-1234/AcmeAlerts" in w.status()["plans"])
        code = main(
            ["feed", "AcmeAlerts", str(DATA / "quotes.csv"), "--worker", w.http_url, "--batch", "2"]
        )
        err = capsys.readouterr().err
        assert code == 1  # one line was rejected
        assert "org.acme.Quote:1.0.0 -> AcmeAlerts/quotes: sent 4, accepted 3, rejected 1" in err
        assert "line 1: attribute 'price' (double): cannot read 'not-a-price'" in err
        out = tmp_path / "out" / "-1234" / "AcmeAlerts" / "alerts.jsonl"
        assert wait_for(
            lambda: [r["data"] for r in read_lines(out)] == [["ACME", 120.5], ["BIG", 999.25]]
        )
    finally:
        w.stop()
