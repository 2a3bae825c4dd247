"""MkDocs hook: the pages under docs/ link to guides that live next to the code (README.md,
SECURITY.md, cep/engine/README.md, ...) and to a few source files. Those files are added to
the site under `repo/` (Markdown as pages, anything else as a plain file), and every relative
link in every page is rewritten to the target's place in the site, so `mkdocs build --strict`
checks these links and their anchors like any other (a link to a missing file still fails)."""
from __future__ import annotations

import posixpath
import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files, InclusionLevel

LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+\.)\s")
FENCE = re.compile(r"^\s*(```|~~~)")
LINK = re.compile(r"(\]\()([^)\s#]+)(#[^)\s]*)?(\))")
PREFIX = "repo/"


def _root(config: Any) -> Path:
    return Path(config["docs_dir"]).resolve().parent


def _is_relative(target: str) -> bool:
    return not (re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target) or target.startswith("/"))


def _site_uri(real: Path, root: Path, docs: Path) -> str | None:
    """Where a file of the repository appears in the site (None: outside the repository)."""
    if real.is_relative_to(docs):
        return real.relative_to(docs).as_posix()
    if real.is_relative_to(root):
        return PREFIX + real.relative_to(root).as_posix()
    return None


def _linked(md_file: Path) -> list[Path]:
    text = md_file.read_text(encoding="utf-8")
    return [(md_file.parent / m.group(2)).resolve() for m in LINK.finditer(text)
            if _is_relative(m.group(2))]


def on_files(files: Files, config: Any) -> Files:
    """Add every repository file reachable by relative links from the docs pages."""
    root, docs = _root(config), Path(config["docs_dir"]).resolve()
    queue = sorted(docs.glob("*.md"))
    seen: set[Path] = set(queue)
    while queue:
        for target in _linked(queue.pop()):
            if target in seen or not target.is_file() or target.is_relative_to(docs):
                continue
            if not target.is_relative_to(root) or ".venv" in target.parts:
                continue
            seen.add(target)
            uri = _site_uri(target, root, docs)
            assert uri is not None
            files.append(File.generated(config, uri, abs_src_path=str(target),
                                        inclusion=InclusionLevel.INCLUDED))
            if target.suffix == ".md":
                queue.append(target)
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    """Rewrite relative links from where the page's source lives to where it is in the site."""
    root, docs = _root(config), Path(config["docs_dir"]).resolve()
    source = Path(page.file.abs_src_path).resolve()

    def rewrite(m: re.Match[str]) -> str:
        target = m.group(2)
        if not _is_relative(target):
            return m.group(0)
        uri = _site_uri((source.parent / target).resolve(), root, docs)
        if uri is None:
            return m.group(0)
        rel = posixpath.relpath(uri, posixpath.dirname(page.file.src_uri) or ".")
        return f"{m.group(1)}{rel}{m.group(3) or ''}{m.group(4)}"

    return _blank_line_before_lists(LINK.sub(rewrite, markdown))


def _blank_line_before_lists(markdown: str) -> str:
    """Python-Markdown starts a list only after a blank line, GitHub also right under a
    paragraph line: add the blank line, so the pages read the same in both (not in code)."""
    out: list[str] = []
    in_code = False
    for line in markdown.split("\n"):
        if FENCE.match(line):
            in_code = not in_code
        elif (not in_code and LIST_ITEM.match(line) and out and out[-1].strip()
              and not LIST_ITEM.match(out[-1]) and not out[-1].startswith((" ", "\t", "|", "#"))):
            out.append("")
        out.append(line)
    return "\n".join(out)
