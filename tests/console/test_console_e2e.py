"""The console in a real headless Chromium against the real system: a manager (REST API,
console, ZeroMQ registry) on the embedded Spark cluster and one real CEP worker with file sinks.

The scenario of issue 9, in order: the plans page; a new plan with a typo is underlined at the
compiler's line and column with the message, and cannot be deployed; fixed and deployed, its
status column reaches ACTIVE with every connection established without a page reload; the plan
page shows the XML query plan and the topology as an SVG graph; the status page lists the
worker and the topology; try-it prints what `cep run` prints for the same plan and events; the
simulator's events reach the worker's file sink. Each step leaves screenshots under
test-artifacts/console/<test>/."""

import json
import re
from pathlib import Path

import pytest
from selenium.webdriver.support.ui import Select

from tests.console.conftest import js_errors, sign_in, sink_rows
from tests.console.console_helpers import (
    TENANT,
    cep_run,
    css,
    error_marks,
    listed_errors,
    one,
    rest,
    set_editor,
    set_field,
    text_of,
    wait_until,
)

pytestmark = pytest.mark.slow
DATA = Path(__file__).parent / "data"
PLAN_FILE, EVENTS_FILE = DATA / "ConsoleTrades.siddhiql", DATA / "trades.jsonl"
PLAN = PLAN_FILE.read_text()
NAME, TOPOLOGY = "ConsoleTrades", f"ConsoleTrades[{TENANT}]"
TYPO = PLAN.replace("[volume > 100]", "[volme > 100]")
PLANS = f"/console/tenants/{TENANT}/plans"
ESTABLISHED = r"(all|1/1) established"


def typo_position():
    """1-based (line, column) of the typo in TYPO, where the compiler points too."""
    import cep

    offset = TYPO.index("volme")
    where = TYPO.count("\n", 0, offset) + 1, offset - TYPO.rfind("\n", 0, offset)
    with pytest.raises(cep.SiddhiQLError) as exc:
        cep.compile(TYPO)
    assert (exc.value.span.line, exc.value.span.column) == where
    return where


def status_ready(text, worker="w1"):
    """The plan's status cell says ACTIVE, the worker's inflow and the outflow established."""
    return (
        "Storm topology : ACTIVE" in text
        and re.search(rf"{worker} : {ESTABLISHED}", text)
        and re.search(rf"Outflow connections : +{ESTABLISHED}", text)
    )


def rest_ready(system):
    _, st = rest(system.url, f"/api/v1/tenants/{TENANT}/plans/{NAME}/status")
    inflow = (st.get("inflow") or {}).get("w1", {}) if isinstance(st, dict) else {}
    return (
        isinstance(st, dict)
        and st.get("state") == "ACTIVE"
        and inflow.get("connected") == 1
        and st["outflow"]["connected"] == st["outflow"]["required"]
    )


@pytest.fixture(scope="module")
def deployed(system):
    """The plan deployed and connected, whether or not the browser test deployed it."""
    status, _ = rest(system.url, f"/api/v1/tenants/{TENANT}/plans/{NAME}")
    if status == 404:
        assert rest(system.url, f"/api/v1/tenants/{TENANT}/plans", PLAN)[0] == 201
    wait_until(
        lambda: rest_ready(system),
        240,
        f"{NAME} ACTIVE with w1 and the outflow connected",
        detail=lambda: rest(system.url, f"/api/v1/tenants/{TENANT}/plans/{NAME}/status"),
    )
    return system


def test_add_plan_with_typo_then_deploy_reaches_active_without_reload(system, browser, shot):
    sign_in(browser, system)
    browser.get(system.url + "/")
    wait_until(lambda: browser.current_url.endswith(PLANS), 10, "/ redirects to the plans page")
    one(browser, "table#plans")
    assert not css(browser, f'tr[data-plan="{NAME}"]')
    shot("plans-page")

    one(browser, "a#add-plan").click()
    wait_until(lambda: browser.current_url.endswith(f"{PLANS}/new"), 10, "the add page opens")
    set_editor(browser, TYPO)
    line, column = typo_position()
    errors = wait_until(
        lambda: [e for e in listed_errors(browser) if e["text"]], 10, "the validation error listed"
    )
    assert (errors[0]["line"], errors[0]["column"]) == (str(line), str(column)), errors
    assert "volme" in errors[0]["text"] and "does not exist" in errors[0]["text"]
    marks = wait_until(lambda: error_marks(browser), 5, "the error span marked in the editor")
    assert marks[0]["from"] == [line, column] and marks[0]["text"] == "volme", marks
    assert any(el.text == "volme" for el in css(browser, "#editor .cm-siddhi-error"))
    shown = wait_until(
        lambda: browser.execute_script(
            """
        const cm = document.querySelector('#editor .CodeMirror').CodeMirror;
        const info = cm.lineInfo(arguments[0] - 1);
        return (info.widgets || []).map(w => w.node.textContent).join(' ');""",
            line,
        ),
        5,
        "the message shown under the typo's line",
    )
    assert "volme" in shown and "does not exist" in shown, shown
    assert not one(browser, "button#deploy").is_enabled(), "deploy enabled on an invalid plan"
    shot("typo-underlined")

    set_editor(browser, PLAN)
    wait_until(
        lambda: not listed_errors(browser) and not error_marks(browser),
        10,
        "the errors cleared once the plan is fixed",
    )
    wait_until(lambda: one(browser, "button#deploy").is_enabled(), 10, "deploy enabled")
    shot("typo-fixed")
    one(browser, "button#deploy").click()
    wait_until(
        lambda: rest(system.url, f"/api/v1/tenants/{TENANT}/plans/{NAME}")[0] == 200,
        15,
        "the plan stored by deploy",
    )
    shot("deploy-clicked")

    browser.get(system.url + PLANS)
    browser.execute_script("window.__sameDocument = 'yes';")
    cell = f'tr[data-plan="{NAME}"] td.dist-status'
    first = text_of(browser, cell)
    assert "Storm topology :" in first and not status_ready(first), first  # not ready yet
    wait_until(
        lambda: status_ready(text_of(browser, cell)),
        240,
        "the status column reaching ACTIVE with connections established",
        detail=lambda: (
            f"shown: {text_of(browser, cell)!r}; REST: "
            + repr(rest(system.url, f"/api/v1/tenants/{TENANT}/plans/{NAME}/status"))
        ),
    )
    assert browser.execute_script("return window.__sameDocument;") == "yes", "the page reloaded"
    assert "Inflow connections :" in text_of(browser, cell)
    row = one(browser, f'tr[data-plan="{NAME}"]')
    assert "running totals" in row.text  # the description column
    for action in ("a.action-view", "a.action-edit", "a.action-queryplan", "button.action-delete"):
        assert row.find_elements("css selector", action), f"{action} missing in the row"
    shot("plans-active")
    assert not js_errors(browser)


def test_plan_page_shows_query_plan_and_topology_graph(deployed, browser, shot):
    sign_in(browser, deployed)
    browser.get(f"{deployed.url}{PLANS}/{NAME}")
    xml = rest(deployed.url, f"/api/v1/tenants/{TENANT}/plans/{NAME}/query-plan")[1]
    pre = one(browser, "pre#query-plan")
    assert browser.execute_script("return arguments[0].textContent;", pre).strip() == xml.strip()
    assert pre.find_elements("css selector", "span"), "the XML is not highlighted"
    _, topo = rest(deployed.url, f"/api/v1/tenants/{TENANT}/plans/{NAME}/topology")
    svg = one(browser, "svg#topology-graph")
    nodes = wait_until(
        lambda: {
            g.get_attribute("data-id") for g in svg.find_elements("css selector", "g.node[data-id]")
        },
        10,
        "graph nodes drawn",
    )
    assert nodes == {c["id"] for c in topo["components"]}
    roles = sorted(c["role"] for c in topo["components"])
    assert roles == ["publisher", "receiver", "siddhi"], topo
    edges = {
        (g.get_attribute("data-from"), g.get_attribute("data-to"))
        for g in svg.find_elements("css selector", "g.edge")
    }
    assert edges == {(e["from"], e["to"]) for e in topo["edges"]}
    for e in topo["edges"]:
        label = svg.find_element(
            "css selector", f'g.edge[data-from="{e["from"]}"][data-to="{e["to"]}"]'
        ).text
        assert e["grouping"] in label and str(e["parallelism"]) in label, (e, label)
    metrics = one(browser, "table#metrics")
    header = metrics.find_element("css selector", "thead").text.lower()
    for column in ("emitted", "transferred", "executed", "capacity"):
        assert column in header, header
    windows = {o.get_attribute("value") for o in css(browser, "select#metrics-window option")}
    assert {"10m", "3h", "1d", "all"} == windows
    one(browser, "ul#recent-errors")
    shot("plan-details")

    browser.execute_script("window.__sameDocument = 'yes';")
    feed(deployed, 3)
    siddhi = next(c["id"] for c in topo["components"] if c["role"] == "siddhi")
    wait_until(
        lambda: metric_cell(browser, siddhi, "Executed") >= 15,
        40,
        "the Siddhi bolt's executed count (15 events fed) shown live",
    )
    Select(one(browser, "select#metrics-window")).select_by_value("all")
    wait_until(
        lambda: metric_cell(browser, siddhi, "Executed") >= 15,
        15,
        "the all-time window's executed count",
    )
    wait_until(
        lambda: (
            "cap-none" not in css(browser, f'g.node[data-id="{siddhi}"]')[0].get_attribute("class")
        ),
        20,
        "the Siddhi bolt coloured by its capacity",
    )
    rates = [el.text for el in css(browser, "svg#topology-graph g.edge .edge-rate")]
    assert any(re.fullmatch(r"[\d.,]+ ev/s", r) for r in rates), rates
    assert browser.execute_script("return window.__sameDocument;") == "yes", "the page reloaded"
    shot("plan-details-live-metrics")
    assert not js_errors(browser)


def feed(system, times):
    """The test's events `times` times into the worker's HTTP receiver."""
    events = [json.loads(x) for x in EVENTS_FILE.read_text().splitlines() if x.strip()]
    for _ in range(times):
        status, body = rest(system.worker.http_url, f"/events/{TENANT}/{NAME}/TradeStream", events)
        assert status == 200 and body["accepted"] == len(events), body


def metric_cell(browser, component, column):
    """The number in table#metrics for a component's row under the header `column`."""
    heads = [th.text.strip().lower() for th in css(browser, "table#metrics thead th")]
    row = css(browser, f'table#metrics tbody tr[data-component="{component}"]')
    cells = row[0].find_elements("css selector", "td") if row else []
    text = cells[heads.index(column.lower())].text if cells else ""
    return float(text.replace(",", "") or 0) if re.fullmatch(r"[\d.,]+", text) else 0


def test_status_page_lists_the_worker_and_the_topology(deployed, browser, shot):
    sign_in(browser, deployed)
    browser.get(deployed.url + "/console/status")
    worker = one(browser, 'table#workers tr[data-worker="w1"]', timeout=20)
    assert "127.0.0.1" in worker.text and "bad" not in (worker.get_attribute("class") or "")
    assert f"{TENANT}/{NAME}" in worker.text, worker.text  # the worker's plans
    topo = one(browser, f'table#topologies tr[data-topology="{TOPOLOGY}"]')
    assert "ACTIVE" in topo.text and "bad" not in (topo.get_attribute("class") or "")
    spark = one(browser, "section#spark").text
    cluster = deployed.manager.launcher.cluster()
    assert cluster.master_url in spark and "alive" in spark, spark
    assert css(browser, f'section#spark a[href="{cluster.ui_url}"]'), "no link to the Spark UI"
    from topology.cluster import master_state

    app_id = {a["name"]: a["id"] for a in master_state(cluster.ui_url)["activeapps"]}[TOPOLOGY]
    assert app_id in topo.text, (app_id, topo.text)  # the topology's Spark application
    assert app_id in one(browser, "section#spark").text
    assert deployed.manager.registry_url.split("//")[1] in one(browser, "section#managers").text
    assert NAME in one(browser, "table#endpoints").text
    flow = one(browser, f'tr[data-flow="{TENANT}/{NAME}"]').text
    assert re.search(r"w1 → \S+:\d+", flow) and re.search(r"\S+ → w1", flow), flow
    shot("status-page")
    assert not js_errors(browser)


def test_try_it_prints_what_cep_run_prints(deployed, browser, shot):
    sign_in(browser, deployed)
    browser.get(deployed.url + "/console/try")
    set_field(browser, "textarea#try-plan", PLAN)
    set_field(browser, "textarea#try-events", EVENTS_FILE.read_text())
    one(browser, "button#try-run").click()
    expected = cep_run(PLAN_FILE, EVENTS_FILE)
    text = wait_until(
        lambda: browser.execute_script(
            "return document.querySelector('pre#try-output').textContent;"
        ).strip(),
        20,
        "try-it output",
    )
    got = [json.loads(x) for x in text.splitlines() if x.strip()]
    assert [{k: r[k] for k in ("stream", "timestamp", "data")} for r in got] == expected
    assert not text_of(browser, "ul#try-errors")
    shot("try-it")
    assert not js_errors(browser)


def test_simulator_events_reach_the_worker_sink(deployed, browser, shot, tmp_path):
    sign_in(browser, deployed)
    browser.get(f"{deployed.url}{PLANS}/{NAME}/simulate")
    options = [o.get_attribute("value") for o in css(browser, "select#sim-stream option")]
    assert options == ["TradeStream"]
    for attr, value in (("symbol", "SIMU"), ("price", "777.5"), ("volume", "4242")):
        field = one(browser, f'input[name="attr-{attr}"]')
        field.clear()
        field.send_keys(value)
    shot("simulator-form")
    one(browser, "button#sim-send").click()
    wait_until(
        lambda: re.search(r"\b1 accepted", text_of(browser, "#sim-result")),
        15,
        "the simulator's event accepted",
    )
    rows = wait_until(
        lambda: [
            r for r in sink_rows(deployed.sink_dir, NAME, "BigTrades") if r["data"][0] == "SIMU"
        ],
        60,
        "the simulated event in the sink",
    )
    assert rows[0]["data"] == ["SIMU", 777.5, 4242]
    shot("simulator-sent")

    upload = tmp_path / "simulated.jsonl"
    upload.write_text(
        "".join(json.dumps({"data": [f"FILE{i}", 10.0 + i, 1000 + i]}) + "\n" for i in range(10))
    )
    one(browser, "input#sim-file").send_keys(str(upload))
    rate = set_field(browser, "input#sim-rate", "20")
    assert rate.get_attribute("value") == "20"
    one(browser, "button#sim-send").click()
    wait_until(
        lambda: re.search(r"\b10 accepted", text_of(browser, "#sim-result")),
        30,
        "the file's 10 events accepted",
    )
    rows = wait_until(
        lambda: (
            [
                r
                for r in sink_rows(deployed.sink_dir, NAME, "BigTrades")
                if r["data"][0].startswith("FILE")
            ][9:]
            and [
                r
                for r in sink_rows(deployed.sink_dir, NAME, "BigTrades")
                if r["data"][0].startswith("FILE")
            ]
        ),
        60,
        "the file's 10 events in the sink",
    )
    assert sorted(r["data"][0] for r in rows) == [f"FILE{i}" for i in range(10)]
    stamps = sorted(r["timestamp"] for r in rows)  # arrival times at the worker
    spread = stamps[-1] - stamps[0]  # paced in ticks of 1/10 s: the last 2 go at 8/20 s
    assert spread >= 380, f"10 events at 20/s arrived within {spread} ms"
    shot("simulator-file-sent")
    assert not js_errors(browser)


def test_edit_shows_cleaning_deploying_active(deployed, browser, shot):
    """Runs last: the plan is redeployed with a higher threshold."""
    sign_in(browser, deployed)
    browser.get(f"{deployed.url}{PLANS}/{NAME}/edit")
    one(browser, "#editor .CodeMirror")
    assert (
        browser.execute_script(
            "return document.querySelector('#editor .CodeMirror').CodeMirror.getValue();"
        )
        == PLAN
    )
    set_editor(browser, PLAN.replace("[volume > 100]", "[volume > 150]"))
    wait_until(lambda: one(browser, "button#deploy").is_enabled(), 10, "deploy enabled")
    one(browser, "button#deploy").click()
    trail = wait_until(
        lambda: (
            "ACTIVE" in text_of(browser, "#deploy-progress")
            and text_of(browser, "#deploy-progress")
        ),
        240,
        "the edit reaching ACTIVE",
    )
    states = re.findall(r"[A-Z_]{4,}", trail)
    assert states[0] == "CLEANING" and "DEPLOYING" in states and states[-1] == "ACTIVE", trail
    shot("edit-progress")
    _, shown = rest(deployed.url, f"/api/v1/tenants/{TENANT}/plans/{NAME}")
    assert "[volume > 150]" in shown["text"]
    assert not js_errors(browser)
