"""`regex:` — Siddhi 3.2.15's regex extension (matches, find, lookingAt, group). The regex is
the first argument; Java's Pattern syntax is read by `support.java_regex`."""

from cep.catalog.ext import register
from cep.catalog.ext.support import BOOL, INT, STRING, entry, java_regex, signature

NS = "regex"
S = (STRING,)


def _need(*xs):
    for x in xs:
        if x is None:
            raise ValueError("argument cannot be null")


def _matches(regex, s):
    _need(regex, s)
    return java_regex(regex).fullmatch(s) is not None


def _looking_at(regex, s):
    _need(regex, s)
    return java_regex(regex).match(s) is not None


def _find(regex, s):
    _need(regex, s)
    return java_regex(regex).search(s) is not None


def _find_from(regex, s, start):
    _need(regex, s, start)
    if start < 0 or start > len(s):
        raise IndexError(f"start index {start} is out of bounds")
    return java_regex(regex).search(s, start) is not None


def _group(regex, s, group):
    """The group-th group of the first match; null when nothing matches or there is no such
    group."""
    _need(regex, s, group)
    m = java_regex(regex).search(s)
    if m is None or group > m.re.groups:
        return None
    return m.group(group)


register(
    NS,
    [
        entry(
            NS,
            "matches",
            2,
            2,
            signature("regex:matches", BOOL, S, S),
            _matches,
            "matches(regex, string): the whole string matches",
            boolean=True,
        ),
        entry(
            NS,
            "find",
            2,
            3,
            signature("regex:find", BOOL, S, S, (INT,)),
            lambda types, args: _find if len(types) == 2 else _find_from,
            "find(regex, string[, start]): a match exists (from start)",
            factory=True,
            boolean=True,
        ),
        entry(
            NS,
            "lookingAt",
            2,
            2,
            signature("regex:lookingAt", BOOL, S, S),
            _looking_at,
            "lookingAt(regex, string): a match at the start",
            boolean=True,
        ),
        entry(
            NS,
            "group",
            3,
            3,
            signature("regex:group", STRING, S, S, (INT,)),
            _group,
            "group(regex, string, n): group n of the first match, else null",
        ),
    ],
)
