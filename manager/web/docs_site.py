"""`GET /docs/` and `GET /docs/<path>`: the documentation site built by `mkdocs build`
(mkdocs.yml, written to var/site/), served read-only from that folder.

Files are served only from inside the folder (werkzeug's safe_join refuses `..`, absolute
paths and drive names). Without a build, /docs/ answers 404 with a one-line hint. Pages get a
Content-Security-Policy of their own: the site's own scripts, styles and images, plus the
SHA-256 hashes of the small inline scripts Material writes into each page (color palette,
base URL), so no 'unsafe-inline' is needed; the console's other headers apply unchanged."""

from __future__ import annotations

import base64
import functools
import hashlib
import re
from pathlib import Path

from flask import Blueprint, Response, current_app, send_file
from werkzeug.exceptions import NotFound
from werkzeug.security import safe_join

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_SITE = ROOT / "var" / "site"
HINT = "the documentation site is not built: run bin/test.sh or `mkdocs build` (mkdocs.yml)\n"
# inline <script> elements that run (not the JSON configuration Material embeds)
INLINE_SCRIPT = re.compile(
    r"<script(?![^>]*\bsrc=)(?![^>]*type=\"application/json\")[^>]*>"
    r"(.*?)</script>",
    re.S,
)
BASE_CSP = (
    "default-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "worker-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)

bp = Blueprint("docs_site", __name__)


def site_dir() -> Path:
    """The built site's folder: app config DOCS_SITE, or var/site/ of the project."""
    return Path(current_app.config.get("DOCS_SITE") or DEFAULT_SITE)


@functools.lru_cache(maxsize=256)
def _script_hashes(path: str, mtime_ns: int) -> str:
    text = Path(path).read_text(encoding="utf-8", errors="replace")
    hashes = {
        "'sha256-" + base64.b64encode(hashlib.sha256(body.encode()).digest()).decode() + "'"
        for body in INLINE_SCRIPT.findall(text)
    }
    return " ".join(sorted(hashes))


def page_csp(path: Path) -> str:
    """The CSP for one file of the site: its inline scripts' hashes join script-src."""
    hashes = _script_hashes(str(path), path.stat().st_mtime_ns) if path.suffix == ".html" else ""
    return f"script-src 'self' {hashes}".rstrip() + "; " + BASE_CSP


@bp.get("/docs/")  # /docs answers 308 to /docs/, so relative links resolve
@bp.get("/docs/<path:name>")
def page(name: str = "index.html") -> Response:
    root = site_dir()
    if not (root / "index.html").is_file():
        return Response(HINT, status=404, mimetype="text/plain")
    joined = safe_join(str(root), name)
    if joined is None:
        raise NotFound()
    path = Path(joined)
    if path.is_dir():
        path = path / "index.html"
    if not path.is_file():
        raise NotFound()
    resp = send_file(path, max_age=0, conditional=True)
    resp.headers["Content-Security-Policy"] = page_csp(path)
    return resp
