"""The XML query plan as highlighted HTML: the same text the DEBUG log shows, every character
escaped, with tags, attribute names, attribute values and comments wrapped in spans."""

import re

from markupsafe import Markup, escape

TOKEN = re.compile(
    r"""
    (?P<comment><!--.*?-->)
  | (?P<cdata><!\[CDATA\[.*?\]\]>)
  | (?P<decl><\?.*?\?>)
  | (?P<tag></?[\w:.\-]+)(?P<attrs>(?:\s+[\w:.\-]+\s*=\s*(?:"[^"]*"|'[^']*'))*)\s*(?P<end>/?>)
""",
    re.S | re.X,
)
ATTR = re.compile(r"""(\s+)([\w:.\-]+)(\s*=\s*)("[^"]*"|'[^']*')""")


def _span(cls, text):
    return f'<span class="xml-{cls}">{escape(text)}</span>'


def _attrs(text):
    out, pos = [], 0
    for m in ATTR.finditer(text):
        out.append(str(escape(text[pos : m.start()])) + str(escape(m.group(1))))
        out.append(_span("attr", m.group(2)) + str(escape(m.group(3))) + _span("value", m.group(4)))
        pos = m.end()
    out.append(str(escape(text[pos:])))
    return "".join(out)


def highlight_xml(xml):
    """Markup of `xml` with spans; text between tokens is escaped verbatim."""
    out, pos = [], 0
    for m in TOKEN.finditer(xml):
        out.append(str(escape(xml[pos : m.start()])))
        if m.group("comment") or m.group("cdata") or m.group("decl"):
            out.append(_span("comment" if m.group("comment") else "decl", m.group(0)))
        else:
            out.append(
                _span("tag", m.group("tag"))
                + _attrs(m.group("attrs"))
                + _span("tag", m.group("end"))
            )
        pos = m.end()
    out.append(str(escape(xml[pos:])))
    return Markup("".join(out))
