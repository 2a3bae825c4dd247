"""Markdown for the generated reference pages: table cells that show any text as written.

Definitions hold free text (`<key>value</key>`, `float|double`, `limits.*`): a cell escapes
it to HTML, so neither Markdown nor the table syntax reads it, and keeps its `code` spans."""

from __future__ import annotations

import html
import re
from typing import Iterable, Sequence

_CODE = re.compile(r"`([^`]+)`")


def text(value: str) -> str:
    """Plain text as inline HTML: escaped, with Markdown's, the table's and attr_list's
    characters as entities (`|`, `*`, `_`, `[`, `]`, `{`, `}`, backslash, backtick)."""
    out = html.escape(value, quote=False)
    for char in "|*_[]{}\\`":
        out = out.replace(char, f"&#{ord(char)};")
    return out


def code(value: str) -> str:
    """`value` as an inline code element."""
    return f"<code>{text(value)}</code>"


def cell(value: str) -> str:
    """Free text with its `code` spans, as one table cell (no line breaks)."""
    parts = _CODE.split(" ".join(value.split()))
    return "".join(code(p) if i % 2 else text(p) for i, p in enumerate(parts))


def lines(values: Iterable[str]) -> str:
    """Several lines in one cell."""
    return "<br>".join(values)


def table(header: Sequence[str], rows: Iterable[Sequence[str]], names: bool = True) -> str:
    """A Markdown table of cells already made with `cell`, `code` or `lines`, in a block of
    class `reference-table` (docs/stylesheets/reference.css: code wraps at spaces only); with
    `names`, also `reference-names`: the first cell's code stays on one line."""
    classes = "reference-table" + (" reference-names" if names else "")
    out = [
        f'<div class="{classes}" markdown>',
        "",
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
    ]
    out += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(out + ["", "</div>"])
