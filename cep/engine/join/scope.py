"""How join expressions reach the two sides: `Left.attr`, `alias.attr`, or a bare name that
only one side has. The `on` condition sees rows `a` (left) and `b` (right); the selector sees
the composite `r = (left_row, right_row)`, where an outer join may leave a side None."""

from cep.engine.expressions import Scope
from cep.errors import UnknownAttributeError, UnknownStreamError
from cep.model import Variable


class JoinScope(Scope):
    state_event = True  # `having` may read the sides (Siddhi 3.2)

    def __init__(self, sides, rows=("r[0]", "r[1]"), nullable=(False, False)):
        """sides: [(definition, references)] for left and right."""
        self.sides = sides
        self.rows = rows
        self.nullable = nullable

    def side_of(self, variable):
        """0 (left) or 1 (right) for a variable; raises when unknown or ambiguous."""
        if variable.stream is not None:
            hits = [i for i, (_, refs) in enumerate(self.sides) if variable.stream in refs]
            if not hits:
                names = sorted(r for _, refs in self.sides for r in refs if r)
                raise UnknownStreamError(
                    f"'{variable.stream}.{variable.name}': '{variable.stream}' is not a side of "
                    f"this join (sides: {', '.join(names)})",
                    variable.span,
                )
            if len(hits) > 1:
                raise UnknownAttributeError(
                    f"'{variable.stream}' names both sides of the self-join: give them "
                    f"aliases (`as a`, `as b`)",
                    variable.span,
                )
            return hits[0]
        hits = [i for i, (d, _) in enumerate(self.sides) if d.index_of(variable.name) >= 0]
        if not hits:
            raise UnknownAttributeError(
                f"attribute '{variable.name}' exists on neither side of the join", variable.span
            )
        if len(hits) > 1:
            raise UnknownAttributeError(
                f"attribute '{variable.name}' is ambiguous: both join sides have it; qualify it "
                f"(`{self._ref(0)}.{variable.name}` or `{self._ref(1)}.{variable.name}`)",
                variable.span,
            )
        return hits[0]

    def _ref(self, i):
        d, refs = self.sides[i]
        return next((r for r in refs if r and r != d.id), d.id)

    def resolve(self, variable):
        i = self.side_of(variable)
        d = self.sides[i][0]
        k = d.index_of(variable.name)
        if k < 0:
            raise UnknownAttributeError(
                f"attribute '{variable.name}' does not exist in '{variable.stream or d.id}' (it "
                f"has {', '.join(d.attribute_names)})",
                variable.span,
            )
        row = self.rows[i]
        src = f"{row}[{k}]"
        if self.nullable[i]:
            src = f"({src} if {row} is not None else None)"
        return src, d.attributes[k].type

    def select_all(self):
        items = []
        for i, (d, _) in enumerate(self.sides):
            for a in d.attributes:
                items.append((a.name, Variable(a.name, self._ref(i))))
        return items
