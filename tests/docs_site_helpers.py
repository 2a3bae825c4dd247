"""The documentation site for tests: `mkdocs build --strict` (mkdocs.yml) into a folder."""
import os
import subprocess
import sys
from pathlib import Path

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
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet",
                           "-d", str(out)], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"}, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return out
