"""Console pages rendered by the real app (real compiler, store, registry; fake launcher):
every page renders with the DOM hooks the browser tests use, HTML in plan names and
descriptions is escaped, and an unknown plan or tenant gets a clear HTML error page."""

import html
import re

import pytest

from manager.web.console.xml_highlight import highlight_xml

SAMPLE = open("conf/samples/StockAnalysis.siddhiql").read()
PLANS = "/console/tenants/-1234/plans"
XSS = "<script>window.__xss=1</script><img src=x onerror=alert(1)>"
ESCAPED_PLAN = f"""@Plan:name('Escaped')
@Plan:description('{XSS}')
@Import('InStream:1.0.0')
define stream InStream (symbol string, price double);
@Export('OutStream:1.0.0')
define stream OutStream (symbol string, price double);
from InStream[price > 10.0] select symbol, price insert into OutStream;
"""
LEAKS = ("Traceback", 'File "', "site-packages")


def add(client, text, tenant=-1234):
    resp = client.post(f"/api/v1/tenants/{tenant}/plans", data=text, content_type="text/plain")
    assert resp.status_code == 201, resp.get_json()


def page(client, path, status=200):
    resp = client.get(path)
    body = resp.get_data(as_text=True)
    assert resp.status_code == status, body[:400]
    assert resp.mimetype == "text/html"
    return body


def test_root_and_console_redirect_to_the_selected_tenants_plans(client):
    assert client.get("/").headers["Location"].endswith("/console/")
    assert client.get("/console/").headers["Location"].endswith(PLANS)
    client.get("/console/tenants/7/plans")  # remembers tenant 7 in a cookie
    assert client.get("/console/").headers["Location"].endswith("/console/tenants/7/plans")


def test_plans_page_lists_plans_with_status_text_and_actions(client):
    add(client, SAMPLE)
    body = page(client, PLANS)
    assert 'id="plans"' in body and 'id="add-plan"' in body and 'id="tenant"' in body
    row = re.search(r'<tr data-plan="StockAnalysis">.*?</tr>', body, re.S).group(0)
    status = re.search(r'<td class="dist-status[^"]*">(.*?)</td>', row, re.S).group(1)
    assert html.unescape(status).startswith("Storm topology : ")
    assert "Outflow connections : " in html.unescape(status)
    for hook in (
        'class="action-view"',
        'class="action-edit"',
        'class="action-queryplan"',
        "action-delete",
    ):
        assert hook in row, hook
    assert "Flags expensive trades" in row  # the description column


def test_plans_of_another_tenant_are_not_listed(client):
    add(client, SAMPLE, tenant=5)
    assert 'data-plan="StockAnalysis"' not in page(client, PLANS)
    body = page(client, "/console/tenants/5/plans")
    assert 'data-plan="StockAnalysis"' in body
    assert '<option value="5" selected>' in body  # the tenant picker shows the tenant


def test_editor_pages_carry_the_plan_text_and_hooks(client):
    add(client, SAMPLE)
    new = page(client, f"{PLANS}/new")
    assert 'id="editor"' in new and 'id="deploy"' in new and 'id="validation-errors"' in new
    assert "vendor/codemirror/codemirror.js" in new and 'data-mode="add"' in new
    edit = page(client, f"{PLANS}/StockAnalysis/edit")
    assert 'data-mode="edit"' in edit and 'id="deploy-progress"' in edit
    text = re.search(r'<textarea id="plan-text"[^>]*>(.*?)</textarea>', edit, re.S).group(1)
    assert html.unescape(text) == "\n" + SAMPLE  # the browser drops a textarea's first newline


def test_plan_page_shows_the_highlighted_xml_query_plan(client, manager):
    add(client, SAMPLE)
    body = page(client, f"{PLANS}/StockAnalysis")
    pre = re.search(r'<pre id="query-plan"[^>]*>(.*?)</pre>', body, re.S).group(1)
    assert 'class="xml-tag"' in pre
    assert html.unescape(re.sub(r"<[^>]+>", "", pre)) == manager.plans.query_plan(
        -1234, "StockAnalysis"
    )
    for hook in (
        'id="topology-graph"',
        'id="metrics"',
        'id="metrics-window"',
        'id="recent-errors"',
    ):
        assert hook in body, hook


def test_highlight_keeps_every_character_and_escapes_markup():
    xml = (
        '<?xml version="1.0"?>\n<a x="1&amp;" y=\'<b>\'><!-- <c> --><b/>t &lt; <![CDATA[<x>]]></a>'
    )
    out = str(highlight_xml(xml))
    assert "<b>" not in out.replace('<span class="xml-tag">&lt;b</span>', "")
    assert html.unescape(re.sub(r"<[^>]+>", "", out)) == xml


def test_status_try_and_simulate_pages_render(client):
    add(client, SAMPLE)
    status = page(client, "/console/status")
    for hook in (
        'id="workers"',
        'id="topologies"',
        'id="endpoints"',
        'id="spark"',
        'id="managers"',
        'data-topology="StockAnalysis[-1234]"',
    ):
        assert hook in status, hook
    tryit = page(client, "/console/try")
    for hook in (
        'id="try-plan"',
        'id="try-events"',
        'id="try-run"',
        'id="try-output"',
        'id="try-errors"',
    ):
        assert hook in tryit, hook
    sim = page(client, f"{PLANS}/StockAnalysis/simulate")
    assert '<option value="StockStream">' in sim
    for name in ("symbol", "price", "volume"):
        assert f'name="attr-{name}"' in sim
    for hook in ('id="sim-send"', 'id="sim-file"', 'id="sim-rate"', 'id="sim-result"'):
        assert hook in sim, hook


def test_html_in_descriptions_is_escaped_everywhere(client):
    add(client, ESCAPED_PLAN)
    for path in (PLANS, f"{PLANS}/Escaped", f"{PLANS}/Escaped/edit", f"{PLANS}/Escaped/simulate"):
        body = page(client, path)
        assert "<script>window.__xss" not in body and "<img src=x" not in body, path
    assert html.escape(XSS) in page(client, PLANS)


@pytest.mark.parametrize("suffix", ["", "/edit", "/simulate"])
def test_unknown_plan_is_a_404_page(client, manager, suffix):
    body = page(client, f"{PLANS}/NoSuchPlan{suffix}", 404)
    assert "NoSuchPlan" in body and 'href="/console/tenants/-1234/plans"' in body
    assert manager.settings["manager.data_dir"] not in body
    assert not any(leak in body for leak in LEAKS)


@pytest.mark.parametrize("tenant", ["abc", "1.5", "-"])
def test_bad_tenant_is_a_400_page(client, tenant):
    body = page(client, f"/console/tenants/{tenant}/plans", 400)
    assert "tenant" in body and not any(leak in body for leak in LEAKS)


def test_names_echoed_by_error_pages_are_escaped(client):
    body = page(client, f"{PLANS}/%3Cscript%3Ex%3C%2Fscript%3E", 404)
    assert "<script>x</script>" not in body and "&lt;script&gt;x&lt;/script&gt;" in body


def test_unknown_console_page_is_a_404_page(client):
    body = page(client, "/console/no/such/page", 404)
    assert "/console/no/such/page" in body


def test_static_assets_ship_in_the_package(client):
    for path in (
        "console/console.css",
        "console/console.js",
        "console/editor.js",
        "console/siddhiql-mode.js",
        "vendor/codemirror/codemirror.js",
        "vendor/codemirror/simple.js",
        "vendor/codemirror/codemirror.css",
    ):
        assert client.get(f"/static/{path}").status_code == 200, path
    body = page(client, "/console/try")
    assert not re.search(r'(src|href)="(https?:)?//', body), "an asset fetched from elsewhere"


def test_status_page_marks_stale_workers_and_failed_topologies(client, monkeypatch):
    from manager.web.console import data

    status = {
        "managers": [
            {
                "url": "http://m:9763",
                "host": "m",
                "role": "leader",
                "registry": "tcp://m:8904",
                "self": True,
            }
        ],
        "spark": {
            "master": "spark://m:7077",
            "alive": True,
            "uiUrl": "http://m:8080",
            "slotsUsed": 2,
            "slotsTotal": 4,
            "applications": [{"id": "app-1", "name": "A[-1234]", "state": "RUNNING", "cores": 2}],
        },
        "topologies": [
            {
                "tenant": -1234,
                "plan": "A",
                "topology": "A[-1234]",
                "state": "ACTIVE",
                "since": 1.0,
                "reason": "",
                "applicationId": "app-1",
                "executors": 3,
            },
            {
                "tenant": -1234,
                "plan": "B",
                "topology": "B[-1234]",
                "state": "FAILED",
                "since": 2.0,
                "reason": "<b>boom</b>",
                "applicationId": None,
                "executors": None,
            },
        ],
        "workers": [
            {
                "id": "w1",
                "host": "h1",
                "roles": ["receiver"],
                "heartbeatAgeSec": 1.0,
                "stale": False,
                "plans": ["-1234/A"],
                "eventsInPerSec": 10.0,
                "eventsOutPerSec": 5.0,
                "cpuPercent": 3.5,
                "memoryRssBytes": 50 << 20,
                "url": "http://h1:9090",
            },
            {
                "id": "w2",
                "host": "h2",
                "roles": [],
                "heartbeatAgeSec": 95.0,
                "stale": True,
                "plans": [],
                "eventsInPerSec": 0.0,
                "eventsOutPerSec": 0.0,
                "cpuPercent": 0.0,
                "memoryRssBytes": 0,
                "url": "",
            },
        ],
        "endpoints": [
            {
                "kind": "receiver",
                "tenant": -1234,
                "plan": "A",
                "stream": "S",
                "worker": None,
                "host": "h3",
                "port": 5000,
                "connections": 1,
                "heartbeatAgeSec": 2.0,
                "stale": False,
            }
        ],
        "flows": [
            {
                "tenant": -1234,
                "plan": "A",
                "inflow": [{"worker": "w1", "stream": "S", "spout": "h3:5000"}],
                "outflow": [{"bolt": "EventPublisherBolt[0]", "worker": "w1"}],
            }
        ],
    }
    monkeypatch.setattr(data, "deployment_status", lambda: status)
    body = page(client, "/console/status")
    assert re.search(r'<tr data-topology="B\[-1234\]" class="bad">', body)
    assert re.search(r'<tr data-topology="A\[-1234\]" class="">', body)
    assert re.search(r'<tr data-worker="w2" class="bad">', body)
    assert re.search(r'<tr data-worker="w1" class="">', body)
    assert "&lt;b&gt;boom&lt;/b&gt;" in body and "<b>boom</b>" not in body
    assert "50.0 MiB" in body and "2 used / 4 total" in body
    assert 'href="http://m:8080/app/?appId=app-1"' in body
    assert "h3:5000" in body and "EventPublisherBolt[0]" in body
