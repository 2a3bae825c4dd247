"""Every console page loads its CSS, JavaScript, fonts and images from the manager itself
(manager/web/static, shipped in the package): nothing is fetched from the internet. Checked on
the served HTML with the Flask test client against the real manager (fake launcher); the
Chromium tests also resolve no host but the loopback, so a CDN reference would break them."""

import re
from html.parser import HTMLParser

import pytest

from tests.console.console_helpers import TENANT, rest

PLAN = """@Plan:name('Assets')
@Import('InStream:1.0.0')
define stream InStream (symbol string, price double);
@Export('OutStream:1.0.0')
define stream OutStream (symbol string, price double);
from InStream[price > 10.0]
select symbol, price
insert into OutStream;
"""
PLANS = f"/console/tenants/{TENANT}/plans"
PAGES = [
    PLANS,
    f"{PLANS}/new",
    f"{PLANS}/Assets",
    f"{PLANS}/Assets/edit",
    f"{PLANS}/Assets/simulate",
    "/console/status",
    "/console/try",
]


class AssetRefs(HTMLParser):
    """The URLs a page makes the browser load: script src, link href (stylesheets, icons,
    fonts), img/source/iframe src, and url(...) in inline styles."""

    def __init__(self):
        super().__init__()
        self.refs = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag in ("script", "img", "source", "iframe", "audio", "video") and a.get("src"):
            self.refs.append(a["src"])
        if tag == "link" and a.get("href"):
            self.refs.append(a["href"])
        for value in (a.get("style") or "",):
            self.refs += re.findall(r"url\(['\"]?([^'\")]+)", value)


@pytest.fixture(scope="module")
def console(fake_console):
    assert rest(fake_console.url, f"/api/v1/tenants/{TENANT}/plans", PLAN)[0] == 201
    return fake_console


def refs_of(client, path):
    resp = client.get(path)
    assert resp.status_code == 200, (path, resp.status_code)
    parser = AssetRefs()
    parser.feed(resp.get_data(as_text=True))
    return parser.refs


@pytest.mark.parametrize("path", PAGES)
def test_page_loads_only_its_own_assets(console, path):
    refs = refs_of(console.client, path)
    assert any(r.endswith(".js") for r in refs) and any(r.endswith(".css") for r in refs), refs
    for ref in refs:
        assert ref.startswith("/") and not ref.startswith("//"), f"{path} loads {ref}"
        resp = console.client.get(ref.split("#")[0])
        assert resp.status_code == 200, f"{path}: {ref} -> {resp.status_code}"
        resp.close()


def test_stylesheets_fetch_nothing_from_elsewhere(console):
    """@import and url(...) inside the shipped CSS stay on the manager too."""
    sheets = {r for p in PAGES for r in refs_of(console.client, p) if r.endswith(".css")}
    for sheet in sheets:
        css = console.client.get(sheet).get_data(as_text=True)
        for ref in re.findall(r"url\(\s*['\"]?([^'\")]+)", css) + re.findall(
            r"@import\s+['\"]([^'\"]+)", css
        ):
            assert not re.match(r"^(https?:)?//", ref), f"{sheet} fetches {ref}"
