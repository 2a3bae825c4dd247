"""JSONPath for the json mapper: the common subset compiled to plain indexing, the rest through
jsonpath-ng.

`$.stock.sym`, `$['stock']['sym']` and `$.items[0].id` (names and indexes only) become one
generated expression `o["stock"]["sym"]`, evaluated for a whole batch inside one generated loop:
about 0.1 us an attribute, where a jsonpath-ng `find` costs tens of microseconds. Paths with
wildcards, filters, slices or `..` are parsed and run by jsonpath-ng (the first match is the
value), which is correct for them and slower."""

import re

from cep.mapping.errors import MappingConfigError

_SEGMENT = re.compile(
    r"""\.([A-Za-z_$@][\w$@\-]*)|\[\s*(-?\d+)\s*\]|\[\s*'([^']*)'\s*\]|\[\s*"([^"]*)"\s*\]"""
)


class JsonPath:
    """One compiled path: `steps` (keys and int indexes) when simple, else a jsonpath-ng
    expression in `expr`."""

    def __init__(self, text: str, where: str = ""):
        self.text = text.strip()
        src = self.text
        if not src.startswith("$"):
            src = "$." + src if not src.startswith("[") else "$" + src
        self.steps = _simple_steps(src)
        self.expr = None
        if self.steps is None:
            try:
                from jsonpath_ng.ext import parse

                self.expr = parse(src)
            except Exception as exc:  # jsonpath-ng raises its own lexer/parser errors
                raise MappingConfigError(
                    f"{where}: JSONPath {text!r} is not valid: {exc}"
                ) from None

    @property
    def simple(self) -> bool:
        return self.steps is not None

    def python(self, var: str) -> str:
        """The indexing expression for a simple path applied to variable `var`."""
        return var + "".join(f"[{s!r}]" for s in self.steps)

    def get(self, obj):
        """The value at this path; KeyError (with the path) when there is none."""
        if self.steps is not None:
            cur = obj
            for s in self.steps:
                try:
                    cur = cur[s]
                except (KeyError, IndexError, TypeError):
                    raise KeyError(f"no value at {self.text}") from None
            return cur
        found = self.expr.find(obj)
        if not found:
            raise KeyError(f"no value at {self.text}")
        return found[0].value

    def all(self, obj) -> list:
        """Every value the path selects (for enclosing elements)."""
        if self.steps is not None:
            try:
                return [self.get(obj)]
            except KeyError:
                return []
        return [m.value for m in self.expr.find(obj)]


def _simple_steps(src):
    pos, steps = 1, []
    while pos < len(src):
        m = _SEGMENT.match(src, pos)
        if m is None:
            return None
        name, index, q1, q2 = m.groups()
        if index is not None:
            steps.append(int(index))
        else:
            steps.append(name if name is not None else (q1 if q1 is not None else q2))
        pos = m.end()
    return steps
