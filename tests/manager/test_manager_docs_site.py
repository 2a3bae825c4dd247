"""The documentation site at /docs/: the real site built by `mkdocs build --strict` (mkdocs.yml)
into a temporary folder, served read-only by the manager's app; 404 with a hint without a
build; no file outside the folder is reachable; pages carry a CSP with their inline scripts'
hashes and the console's other security headers."""

import base64
import hashlib
import re

import pytest

from manager.web import create_app, docs_site
from tests.docs_site_helpers import build_docs_site
from tests.manager.test_manager_api import manager  # noqa: F401 - shared fixture


@pytest.fixture(scope="module")
def built_site(tmp_path_factory):
    """The project's documentation site, built from docs/ into a temporary folder."""
    return build_docs_site(tmp_path_factory.mktemp("site"))


def client_for(manager, site):
    return create_app({"MANAGER": manager, "TESTING": True, "DOCS_SITE": str(site)}).test_client()


def test_docs_serves_the_built_site_without_login(manager, built_site):
    client = client_for(manager, built_site)  # no credentials: the docs are public
    resp = client.get("/docs/")
    assert resp.status_code == 200 and resp.mimetype == "text/html"
    html = resp.get_data(as_text=True)
    assert "<title>sparkcep documentation</title>" in html
    assert client.get("/docs").headers["Location"].endswith("/docs/")  # 308
    page = client.get("/docs/concepts.html")
    assert page.status_code == 200
    assert "Concepts: plans, query plans, topologies, workers" in page.get_data(as_text=True)
    # a component guide that lives next to the code is in the site too
    assert client.get("/docs/repo/cep/engine/index.html").status_code == 200
    css = re.search(r'href="(assets/stylesheets/main[^"]+\.css)"', html).group(1)
    assert client.get("/docs/" + css).mimetype == "text/css"
    assert client.get("/docs/no-such-page.html").status_code == 404


def test_docs_pages_get_a_csp_with_their_inline_scripts_hashes(manager, built_site):
    resp = client_for(manager, built_site).get("/docs/index.html")
    csp = resp.headers["Content-Security-Policy"]
    assert "'unsafe-inline'" not in csp and "frame-ancestors 'none'" in csp
    html = resp.get_data(as_text=True)
    bodies = docs_site.INLINE_SCRIPT.findall(html)
    assert bodies, "Material writes inline scripts into each page"
    for body in bodies:
        digest = base64.b64encode(hashlib.sha256(body.encode()).digest()).decode()
        assert f"'sha256-{digest}'" in csp
    assert resp.headers["X-Frame-Options"] == "DENY"
    assert resp.headers["X-Content-Type-Options"] == "nosniff"


def test_docs_without_a_build_answers_404_with_a_hint(manager, tmp_path):
    resp = client_for(manager, tmp_path / "not-built").get("/docs/")
    assert resp.status_code == 404
    assert "bin/test.sh" in resp.get_data(as_text=True)
    assert "mkdocs build" in resp.get_data(as_text=True)


@pytest.mark.parametrize(
    "path",
    [
        "../secret.txt",
        "..%2Fsecret.txt",
        "%2e%2e/secret.txt",
        "sub/../../secret.txt",
        "/etc/passwd",
        "%2Fetc%2Fpasswd",
        "..\\secret.txt",
    ],
)
def test_docs_never_serves_a_file_outside_the_site(manager, tmp_path, path):
    site = tmp_path / "site"
    (site / "sub").mkdir(parents=True)
    (site / "index.html").write_text("<title>t</title>")
    (tmp_path / "secret.txt").write_text("SECRET")
    resp = client_for(manager, site).get("/docs/" + path)
    assert resp.status_code in (308, 404), resp.status_code
    assert b"SECRET" not in resp.get_data() and b"root:" not in resp.get_data()
