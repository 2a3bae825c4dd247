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
    for hook in ('class="action-view"', 'class="action-edit"', 'class="action-queryplan"',
                 'action-delete'):
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
    assert html.unescape(re.sub(r"<[^>]+>", "", pre)) == manager.plans.query_plan(-1234, "StockAnalysis")
    for hook in ('id="topology-graph"', 'id="metrics"', 'id="metrics-window"', 'id="recent-errors"'):
        assert hook in body, hook


def test_highlight_keeps_every_character_and_escapes_markup():
    xml = '<?xml version="1.0"?>\n<a x="1&amp;" y=\'<b>\'><!-- <c> --><b/>t &lt; <![CDATA[<x>]]></a>'
    out = str(highlight_xml(xml))
    assert "<b>" not in out.replace('<span class="xml-tag">&lt;b</span>', "")
    assert html.unescape(re.sub(r"<[^>]+>", "", out)) == xml


def test_status_try_and_simulate_pages_render(client):
    add(client, SAMPLE)
    status = page(client, "/console/status")
    for hook in ('id="workers"', 'id="topologies"', 'id="endpoints"', 'id="spark"',
                 'id="managers"', 'data-topology="StockAnalysis[-1234]"'):
        assert hook in status, hook
    tryit = page(client, "/console/try")
    for hook in ('id="try-plan"', 'id="try-events"', 'id="try-run"', 'id="try-output"', 'id="try-errors"'):
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
    for path in ("console/console.css", "console/console.js", "console/editor.js",
                 "console/siddhiql-mode.js", "vendor/codemirror/codemirror.js",
                 "vendor/codemirror/simple.js", "vendor/codemirror/codemirror.css"):
        assert client.get(f"/static/{path}").status_code == 200, path
    body = page(client, "/console/try")
    assert not re.search(r'(src|href)="(https?:)?//', body), "an asset fetched from elsewhere"
