"""Console pages in a real headless Chromium against the real manager (store, compiler, registry,
REST API, console) with a fake Spark launcher: the tenant picker, delete with confirmation,
try-it's positioned errors, and the status page's auto-refresh, where a stale worker and a
FAILED topology stand out (class `bad`). The real-Spark scenario is test_console_e2e.py."""

import time

import pytest
from selenium.webdriver.support.ui import Select

from tests.console.conftest import js_errors, sign_in
from tests.docs_site_helpers import build_docs_site
from tests.console.console_helpers import TENANT, css, one, rest, set_field, text_of, wait_until

pytestmark = pytest.mark.slow
PLAN = """@Plan:name('{name}')
@Plan:description('{name} of the console page tests')
@Import('InStream:1.0.0')
define stream InStream (symbol string, price double);
@Export('OutStream:1.0.0')
define stream OutStream (symbol string, price double);
from InStream[price > 10.0]
select symbol, price
insert into OutStream;
"""


def add(console, tenant, name):
    status, body = rest(console.url, f"/api/v1/tenants/{tenant}/plans", PLAN.format(name=name))
    assert status == 201, body


def report_worker(console, wid, age=0.0):
    """A worker-info message as a worker sends it, heard `age` seconds ago."""
    table = console.manager.registry.table
    table.report_worker(
        {
            "worker": wid,
            "host": "127.0.0.1",
            "url": "http://127.0.0.1:1",
            "roles": ["receiver", "publisher"],
            "plans": [],
            "machine": [],
            "eventsIn": 0,
            "eventsOut": 0,
            "memoryRssBytes": 1 << 20,
            "cpuPercent": 1.0,
        }
    )
    if age:
        with table._lock:
            seen, info = table.workers[wid]
            table.workers[wid] = (seen - age, info)
            table.clients[wid] = seen - age


def test_tenant_picker_switches_the_plans_shown(fake_console, browser, shot):
    sign_in(browser, fake_console)
    add(fake_console, TENANT, "SuperPlan")
    add(fake_console, 7, "SevenPlan")
    browser.get(fake_console.url + f"/console/tenants/{TENANT}/plans")
    one(browser, 'tr[data-plan="SuperPlan"]')
    Select(one(browser, "select#tenant")).select_by_value("7")
    wait_until(
        lambda: browser.current_url.endswith("/console/tenants/7/plans"),
        10,
        "the picker opening tenant 7's plans",
    )
    one(browser, 'tr[data-plan="SevenPlan"]')
    assert not css(browser, 'tr[data-plan="SuperPlan"]')
    shot("tenant-7")
    browser.get(fake_console.url + "/console/")  # the picked tenant is remembered
    wait_until(
        lambda: browser.current_url.endswith("/console/tenants/7/plans"),
        10,
        "/console/ opening the picked tenant",
    )
    assert not js_errors(browser)


def test_docs_link_opens_the_documentation_site(fake_console, browser, shot, tmp_path):
    """The console's Docs link opens the site the manager serves at /docs/ (built here from
    docs/), with its title, styles and scripts loaded under the pages' own CSP."""
    fake_console.app.config["DOCS_SITE"] = str(build_docs_site(tmp_path / "site"))
    try:
        sign_in(browser, fake_console)
        browser.get(fake_console.url + f"/console/tenants/{TENANT}/plans")
        one(browser, "nav.mainnav a#docs-link").click()
        wait_until(
            lambda: browser.title == "sparkcep documentation", 15, "the documentation site's title"
        )
        assert browser.current_url.startswith(fake_console.url + "/docs/")
        # Material's script ran (it marks the root element) and its search box is there
        wait_until(
            lambda: "js" in (one(browser, "html").get_attribute("class") or "").split(),
            10,
            "Material's script running",
        )
        # the search runs in a web worker loaded from the site (worker-src 'self')
        box = one(browser, "input.md-search__input")
        box.click()
        box.send_keys("backtest")
        wait_until(lambda: css(browser, "li.md-search-result__item"), 20, "search results")
        shot("docs-search")
        browser.get(browser.current_url.split("#")[0])
        one(browser, 'a[href="concepts.html"]').click()
        wait_until(lambda: browser.title.startswith("Concepts"), 10, "the concepts page")
        shot("docs-concepts")
        errors = js_errors(browser)
        assert not errors, errors  # a CSP refusal shows here
    finally:
        fake_console.app.config.pop("DOCS_SITE", None)


def test_delete_asks_first(fake_console, browser, shot):
    sign_in(browser, fake_console)
    add(fake_console, TENANT, "DeleteMe")
    path = f"/api/v1/tenants/{TENANT}/plans/DeleteMe"
    browser.get(fake_console.url + f"/console/tenants/{TENANT}/plans")
    button = one(browser, 'tr[data-plan="DeleteMe"] button.action-delete')
    button.click()
    alert = wait_until(lambda: browser.switch_to.alert, 5, "a confirmation")
    assert "DeleteMe" in alert.text
    alert.dismiss()
    time.sleep(0.5)
    assert rest(fake_console.url, path)[0] == 200, "deleted although the user said no"
    one(browser, 'tr[data-plan="DeleteMe"] button.action-delete').click()
    wait_until(lambda: browser.switch_to.alert, 5, "a confirmation").accept()
    wait_until(lambda: not css(browser, 'tr[data-plan="DeleteMe"]'), 10, "the row removed")
    assert rest(fake_console.url, path)[0] == 404
    shot("deleted")
    assert not js_errors(browser)


def test_try_it_shows_positioned_errors(fake_console, browser, shot):
    sign_in(browser, fake_console)
    browser.get(fake_console.url + "/console/try")
    bad = PLAN.format(name="Bad").replace("select symbol", "selct symbol")
    set_field(browser, "textarea#try-plan", bad)
    set_field(
        browser,
        "textarea#try-events",
        '{"stream": "InStream", "timestamp": 1, "data": ["A", 11.0]}',
    )
    one(browser, "button#try-run").click()
    error = wait_until(lambda: text_of(browser, "ul#try-errors"), 10, "try-it's errors")
    line = bad[: bad.index("selct")].count("\n") + 1
    assert "selct" in error and f"{line}" in error, error
    assert not text_of(browser, "pre#try-output").strip().startswith("{")
    shot("try-errors")
    assert not js_errors(browser)


def test_status_page_refreshes_and_marks_stale_workers_and_failed_topologies(
    fake_console, browser, shot
):
    sign_in(browser, fake_console)
    liveness = fake_console.manager.registry.table.liveness
    report_worker(fake_console, "w-live")
    report_worker(fake_console, "w-stale", age=1.5 * liveness)
    launcher = fake_console.manager.launcher
    launcher.initial_state = "FAILED"
    try:
        add(fake_console, TENANT, "Broken")
        wait_until(
            lambda: (
                rest(fake_console.url, f"/api/v1/tenants/{TENANT}/plans/Broken/status")[1].get(
                    "state"
                )
                == "FAILED"
            ),
            10,
            "Broken FAILED",
        )
    finally:
        launcher.initial_state = "ACTIVE"
    browser.get(fake_console.url + "/console/status")
    browser.execute_script("window.__sameDocument = 'yes';")
    live = one(browser, 'table#workers tr[data-worker="w-live"]')
    assert "bad" not in (live.get_attribute("class") or "").split()
    stale = one(browser, 'table#workers tr[data-worker="w-stale"]')
    assert "bad" in stale.get_attribute("class").split()
    failed = one(browser, f'table#topologies tr[data-topology="Broken[{TENANT}]"]')
    assert "bad" in failed.get_attribute("class").split() and "FAILED" in failed.text
    shot("stale-and-failed")

    report_worker(fake_console, "w-new")
    wait_until(
        lambda: css(browser, 'table#workers tr[data-worker="w-new"]'),
        15,
        "a new worker shown by the auto-refresh",
    )
    assert browser.execute_script("return window.__sameDocument;") == "yes", "the page reloaded"
    shot("refreshed")
    assert not js_errors(browser)


def test_editor_refuses_what_plan_add_refuses(fake_console, browser, shot):
    """A check only the manager applies (a plan name that cannot be a file or topology name):
    the editor lists the same message a rejected add returns, and keeps deploy disabled."""
    sign_in(browser, fake_console)
    from tests.console.console_helpers import error_marks, listed_errors, set_editor

    bad = PLAN.format(name="bad/name")
    status, refused = rest(fake_console.url, f"/api/v1/tenants/{TENANT}/plans", bad)
    assert status == 400 and refused["errors"], refused
    browser.get(fake_console.url + f"/console/tenants/{TENANT}/plans/new")
    set_editor(browser, bad)
    errors = wait_until(
        lambda: [e for e in listed_errors(browser) if e["text"]], 10, "the name error listed"
    )
    assert refused["errors"][0]["message"] in errors[0]["text"], (errors, refused)
    assert (errors[0]["line"], errors[0]["column"]) == (
        str(refused["errors"][0]["line"]),
        str(refused["errors"][0]["column"]),
    )
    assert error_marks(browser) and not one(browser, "button#deploy").is_enabled()
    shot("manager-check-refused")
    listed = rest(fake_console.url, f"/api/v1/tenants/{TENANT}/plans")[1]["plans"]
    assert "bad/name" not in [p["name"] for p in listed]
    assert not js_errors(browser)


def test_try_it_with_delays_gives_cep_runs_output(fake_console, browser, shot, tmp_path):
    """Event lines with `delay` (ms after the previous event) instead of a timestamp: the output
    is what `cep run --playback` prints for the same events with the timestamps written out."""
    import json
    from tests.console.console_helpers import cep_run

    sign_in(browser, fake_console)
    plan = (
        PLAN.format(name="Delays")
        .replace("from InStream[price > 10.0]", "from InStream#window.time(2 sec)")
        .replace("select symbol, price", "select symbol, sum(price) as price")
    )
    lines = [
        {"stream": "InStream", "timestamp": 1000, "data": ["A", 11.0]},
        {"stream": "InStream", "delay": 1500, "data": ["B", 12.0]},
        {"stream": "InStream", "delay": 1500, "data": ["C", 13.0]},
        {"stream": "InStream", "delay": 3000, "data": ["D", 14.0]},
    ]
    stamped, now = [], 0
    for e in lines:
        now = e.get("timestamp", now + e.get("delay", 0))
        stamped.append({"stream": e["stream"], "timestamp": now, "data": e["data"]})
    (tmp_path / "p.siddhiql").write_text(plan)
    (tmp_path / "e.jsonl").write_text("".join(json.dumps(e) + "\n" for e in stamped))
    expected = cep_run(tmp_path / "p.siddhiql", tmp_path / "e.jsonl")
    browser.get(fake_console.url + "/console/try")
    set_field(browser, "textarea#try-plan", plan)
    set_field(browser, "textarea#try-events", "\n".join(json.dumps(e) for e in lines))
    one(browser, "button#try-run").click()
    text = wait_until(
        lambda: browser.execute_script(
            "return document.querySelector('pre#try-output').textContent;"
        ).strip(),
        10,
        "try-it output",
    )
    got = [json.loads(x) for x in text.splitlines() if x.strip()]
    assert [{k: r[k] for k in ("stream", "timestamp", "data")} for r in got] == expected
    assert len(expected) >= 4  # the window's sums and expiries
    shot("try-delays")
    assert not js_errors(browser)


# the lines a table cell's text takes: its text boxes from top to bottom, in font sizes
CELL_LINES = """
return [...document.querySelectorAll(arguments[0])].map(td => {
  const range = document.createRange();
  range.selectNodeContents(td);
  const boxes = [...range.getClientRects()].filter(r => r.width > 0 && r.height > 0);
  const size = parseFloat(getComputedStyle(td).fontSize);
  const top = Math.min(...boxes.map(r => r.top)), bottom = Math.max(...boxes.map(r => r.bottom));
  return {text: td.textContent.trim(), height: (bottom - top) / size};
});
"""


@pytest.mark.parametrize("width", [1280, 1400, 1920])
def test_status_page_managers_cells_stay_on_one_line(fake_console, browser, shot, width):
    """Host, role, REST API URL and registry of the Managers panel are each one line, not
    wrapped letter by letter ("lead / er", "127.0.0 / .1") in a squeezed table."""
    from tests.console.conftest import WINDOW

    sign_in(browser, fake_console)
    browser.set_window_size(width, WINDOW[1])
    try:
        browser.get(fake_console.url + "/console/status")
        cells = browser.execute_script(CELL_LINES, "#managers-body tr td")
        shot(f"managers-{width}")
    finally:
        browser.set_window_size(*WINDOW)
    texts = [c["text"] for c in cells]
    assert any(t.startswith("leader") for t in texts), texts  # the row is there
    assert any(t.startswith("http://127.0.0.1:") for t in texts), texts
    # one line of text is about 1.2 font sizes high (a badge a little more); two are 2.4
    wrapped = [c for c in cells if c["text"] and c["height"] >= 2.0]
    assert not wrapped, f"cells wrapped at {width} px: {wrapped}"
    assert " s" not in texts, texts  # no lease age without a lease
