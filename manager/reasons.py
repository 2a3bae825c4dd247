"""Reasons shown to users (REST status, console) name no server files: the log keeps the detail.

A topology error's text may name the manager's state files (ClusterStartError says "see
<state dir>/master.log"); status reasons are served to any user of the tenant, so absolute paths
are cut out of them (URLs such as spark://host:7077 and counts such as 1/2 are left alone)."""

import re

_PATH = re.compile(r"(?<![\w:/.~-])/(?:[\w.@+-]+/)*[\w.@+-]+")
_SEE = re.compile(r";?\s*see\s+(?:<file>(?:\s*(?:,|and)\s*)?)+", re.IGNORECASE)


def public_reason(text):
    """`text` without absolute filesystem paths ("see <paths>" becomes "see the manager log")."""
    if not text:
        return text
    out = _PATH.sub("<file>", str(text))
    out = _SEE.sub("; see the manager log", out)
    return out.replace("<file>", "<server file>")
