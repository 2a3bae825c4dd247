"""Name resolution for typing: which attributes an expression can see, and their types.

A scope answers `resolve(variable) -> AttrType` (raising a positioned error) and
`has_reference(name)`. `AttributeScope` is one stream, table or output row; `CompositeScope`
joins several (join sides, pattern states, a table in `cond in T`). The engine may use these
with `cep.compiler.types.expression_type` to type expressions the same way."""

from cep.errors import InvalidQueryError, UnknownAttributeError, UnknownStreamError, attribute_list


class AttributeScope:
    """The attributes of one definition (or output row), reachable bare or as `ref.attr`."""

    def __init__(self, refs, attributes, label, alias=None):
        self.refs = tuple(r for r in refs if r)
        self.alias = alias  # when set, `alias.attr` wins over `stream_id.attr` in a composite
        self.types = {a.name: a.type for a in attributes}
        self.label = label

    def has_reference(self, name):
        return name in self.refs

    def lookup(self, name):
        """The type of attribute `name`, or None."""
        return self.types.get(name)

    def resolve(self, variable):
        if variable.stream is not None and variable.stream not in self.refs:
            raise UnknownStreamError(
                f"'{variable.stream}' is not a stream or alias of this query "
                f"(it reads {self.label})",
                variable.span,
            )
        found = self.types.get(variable.name)
        if found is None:
            raise UnknownAttributeError(
                f"attribute '{variable.name}' does not exist in {self.label} "
                f"({attribute_list(self.types.items())})",
                variable.span,
            )
        return found


class CompositeScope:
    """Several scopes; a bare name must be in exactly one of them when `strict`, else the first
    scope that has it wins (in order)."""

    def __init__(self, scopes, strict=False):
        self.scopes = tuple(scopes)
        self.strict = strict

    def has_reference(self, name):
        return any(s.has_reference(name) for s in self.scopes)

    def lookup(self, name):
        for s in self.scopes:
            found = s.lookup(name)
            if found is not None:
                return found
        return None

    def resolve(self, variable):
        if variable.stream is not None:
            return self._resolve_qualified(variable)
        holders = [s for s in self.scopes if s.lookup(variable.name) is not None]
        if not holders:
            labels = " or ".join(s.label for s in self._leaves())
            raise UnknownAttributeError(
                f"attribute '{variable.name}' does not exist in {labels}", variable.span
            )
        if self.strict and len(holders) > 1:
            names = " and ".join(s.label for s in holders)
            raise InvalidQueryError(
                f"attribute '{variable.name}' is ambiguous: {names} both have it; qualify it "
                f"as <stream>.{variable.name}",
                variable.span,
            )
        return holders[0].lookup(variable.name)

    def _resolve_qualified(self, variable):
        holders = [s for s in self._leaves() if s.has_reference(variable.stream)]
        by_alias = [s for s in holders if getattr(s, "alias", None) == variable.stream]
        if by_alias:
            return by_alias[0].resolve(variable)
        if self.strict and len(holders) > 1:
            names = " and ".join(s.label for s in holders)
            raise InvalidQueryError(
                f"'{variable.stream}' is ambiguous: it names {names}; use their aliases",
                variable.span,
            )
        if holders:
            return holders[0].resolve(variable)
        refs = ", ".join(r for s in self._leaves() for r in s.refs) or "none"
        raise UnknownStreamError(
            f"'{variable.stream}' is not a stream, alias or pattern state of this query "
            f"(known: {refs})",
            variable.span,
        )

    def _leaves(self):
        for s in self.scopes:
            if isinstance(s, CompositeScope):
                yield from s._leaves()
            else:
                yield s

    @property
    def label(self):
        return " or ".join(s.label for s in self._leaves())


class HavingScope:
    """What `having` sees in a join or a pattern (Siddhi 3.2 evaluates it on the state event,
    which still holds the matched input events): a qualified name reads the input; a bare name
    reads the output row, or the input when the output has no such attribute. A single-stream
    query's having sees only the output row (use the output's AttributeScope there)."""

    def __init__(self, output, inputs):
        self.output, self.inputs = output, inputs

    def has_reference(self, name):
        return self.inputs.has_reference(name)

    def lookup(self, name):
        found = self.output.lookup(name)
        return found if found is not None else self.inputs.lookup(name)

    def resolve(self, variable):
        if variable.stream is None and self.output.lookup(variable.name) is not None:
            return self.output.resolve(variable)
        if variable.stream is None and self.inputs.lookup(variable.name) is None:
            raise UnknownAttributeError(
                f"attribute '{variable.name}' does not exist in {self.output.label} or "
                f"{self.inputs.label}",
                variable.span,
            )
        return self.inputs.resolve(variable)

    @property
    def label(self):
        return f"{self.output.label} or {self.inputs.label}"
