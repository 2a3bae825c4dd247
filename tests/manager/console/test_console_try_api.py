"""POST /api/v1/try: a plan over JSON-lines events in-process, compared with what `cep run
--playback` prints for the same files (the CLI's own entry point is the oracle)."""

import io
import json
import types

from cep.cli.run import main as cep_run_main

PLAN_FILE, EVENTS_FILE = "conf/samples/StockAnalysis.siddhiql", "conf/samples/StockStream.jsonl"


def cep_run(plan_file, events_file):
    out, err = io.StringIO(), io.StringIO()
    args = types.SimpleNamespace(plan=plan_file, events=events_file, playback=True, on_error="skip")
    code = cep_run_main(args, out, err)
    return code, [json.loads(x) for x in out.getvalue().splitlines() if x.strip()], err.getvalue()


def try_it(client, plan, events):
    resp = client.post("/api/v1/try", json={"plan": plan, "events": events})
    assert resp.status_code == 200, resp.get_json()
    return resp.get_json()


def test_try_gives_cep_runs_output_on_the_sample(client):
    code, expected, _ = cep_run(PLAN_FILE, EVENTS_FILE)
    assert code == 0 and expected, "the sample produces output"
    body = try_it(client, open(PLAN_FILE).read(), open(EVENTS_FILE).read())
    assert body["errors"] == [] and body["badLines"] == []
    assert body["events"] == expected
    by_stream = {}
    for e in expected:
        by_stream.setdefault(e["stream"], []).append(
            {"timestamp": e["timestamp"], "data": e["data"]}
        )
    assert body["outputs"] == by_stream


def test_bad_event_lines_are_reported_like_cep_run_and_the_rest_still_run(client, tmp_path):
    lines = open(EVENTS_FILE).read().splitlines()
    lines[3] = "{not json"
    lines[5] = '{"stream": "StockStream", "timestamp": 1700000012000, "data": ["X", "cheap", 1]}'
    events = tmp_path / "events.jsonl"
    events.write_text("\n".join(lines) + "\n")
    _, expected, err = cep_run(PLAN_FILE, str(events))
    body = try_it(client, open(PLAN_FILE).read(), events.read_text())
    assert body["events"] == expected
    assert [b["line"] for b in body["badLines"]] == [4, 6]
    for bad in body["badLines"]:
        assert f"line {bad['line']}: {bad['reason']}" in err


def test_a_rejected_plan_gives_positioned_errors(client):
    bad = open(PLAN_FILE).read().replace("[price > 500.0]", "[prize > 500.0]")
    body = try_it(client, bad, open(EVENTS_FILE).read())
    assert body["events"] == [] and body["errors"]
    err = body["errors"][0]
    offset = bad.index("prize")
    assert (err["line"], err["column"]) == (
        bad.count("\n", 0, offset) + 1,
        offset - bad.rfind("\n", 0, offset),
    )
    assert "prize" in err["message"] and err["endColumn"] > err["column"]


def test_delay_lines_get_the_previous_timestamp_plus_the_delay(client):
    plan = """@Plan:name('Delays')
define stream S (v int);
from S select v insert into Out;
"""
    events = (
        '{"stream": "S", "timestamp": 1000, "data": [1]}\n'
        '{"stream": "S", "delay": 250, "data": [2]}\n{"stream": "S", "delay": 50, "data": [3]}\n'
    )
    body = try_it(client, plan, events)
    assert [(e["timestamp"], e["data"]) for e in body["events"]] == [
        (1000, [1]),
        (1250, [2]),
        (1300, [3]),
    ]


def test_malformed_try_requests_are_400_json(client):
    for body in ([], {"plan": "", "events": ""}, {"plan": "x", "events": 5}):
        resp = client.post("/api/v1/try", json=body)
        assert resp.status_code == 400 and resp.get_json()["error"] == "BadConsoleRequestError"
    resp = client.post("/api/v1/try", data="not json", content_type="text/plain")
    assert resp.status_code == 400 and "JSON object" in resp.get_json()["message"]


def test_try_refuses_a_database_table_at_its_annotation(client):
    """A try-it run happens in the manager: it never opens a plan's database."""
    plan = (
        "define stream S (k string);\n"
        "@from(eventtable='rdbms', datasource.name='default', table.name='t')\n"
        "define table T (k string);\nfrom S insert into T;\n"
    )
    body = try_it(client, plan, '{"stream": "S", "data": ["a"]}\n')
    assert body["events"] == []
    assert len(body["errors"]) == 1
    error = body["errors"][0]
    assert "does not open databases" in error["message"] and error["line"] == 2
