"""The documentation site for tests: `mkdocs build --strict` (mkdocs.yml) into a folder."""

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import IN_CI

ROOT = Path(__file__).resolve().parents[1]


def build_docs_site(out: Path) -> Path:
    """Build the project's documentation site from docs/ into `out`; skips (fails under CI)
    without mkdocs, fails when the build does (a broken link or anchor)."""
    try:
        import material  # noqa: F401
        import mkdocs  # noqa: F401
    except ImportError:
        message = "mkdocs-material is not installed (pip install -e .[docs]; bin/test.sh does)"
        pytest.fail(message) if IN_CI else pytest.skip(message)
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "-d", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    return out


HOOKS = ROOT / "docs" / "_hooks"


def import_hook_modules() -> None:
    """Make the site's hooks importable as the build imports them: `refgen` (the reference
    pages' writers) and the hook modules themselves."""
    if str(HOOKS) not in sys.path:
        sys.path.insert(0, str(HOOKS))


def page_tables(page: Path) -> list[tuple[str, str, list[list[Any]]]]:
    """The rows of every table of a built page, by heading: (h2 id, h3 id or "", rows), each
    row its <td> elements (lxml), in the page's order."""
    import lxml.html

    article = lxml.html.parse(str(page)).getroot().xpath("//article")[0]
    out: list[tuple[str, str, list[list[Any]]]] = []
    h2 = h3 = ""
    for el in article.iter("h2", "h3", "table"):
        if el.tag == "h2":
            h2, h3 = el.get("id", ""), ""
        elif el.tag == "h3":
            h3 = el.get("id", "")
        else:
            out.append((h2, h3, [tr.xpath("./td") for tr in el.xpath(".//tr") if tr.xpath("./td")]))
    return out


def cell_codes(td: Any) -> list[str]:
    """The text of each <code> in a table cell."""
    return [c.text_content() for c in td.xpath(".//code")]
