"""Parse-tree callbacks for query inputs (a Transformer mixin): streams, joins, patterns, sequences.

A plain stream is parsed as a one-state chain without alias; `state_input` decides whether the
input is a single stream, a pattern (`->`) or a sequence (`,`)."""

from lark import Transformer, v_args
import dataclasses

from cep.compiler.expression_builder import meta_span
from cep.errors import InvalidQueryError, SiddhiQLSyntaxError
from cep.model import (
    AbsentState,
    CountState,
    EveryState,
    Filter,
    JoinInputStream,
    LogicalState,
    NextState,
    SingleInputStream,
    StateInputStream,
    StreamFunction,
    StreamState,
    Window,
)


@dataclasses.dataclass(frozen=True)
class Group:
    """A parenthesised state chain and its `within`, until `every` or the input takes it."""

    chain: object
    within_millis: object
    span: object


@v_args(meta=True)
class InputBuilder(Transformer):
    """Transformer callbacks for query inputs; notes the chain operators the query used."""

    def _note(self, kind, span):
        self._chain_kinds.setdefault(kind, span)

    # -- single streams --
    def stream_source(self, meta, children):
        return (children[0], False)

    def inner_source(self, meta, children):
        return (children[0], True)

    def basic_stream(self, meta, children):
        (name, inner), handlers = children[0], tuple(children[1:])
        return SingleInputStream(str(name), handlers, None, inner, meta_span(meta))

    def filter(self, meta, children):
        return Filter(children[0], meta_span(meta))

    def window(self, meta, children):
        call = children[0]
        return Window(call.name, call.args, call.namespace, meta_span(meta))

    def stream_function(self, meta, children):
        call = children[0]
        return StreamFunction(call.name, call.args, call.namespace, meta_span(meta))

    # -- joins --
    def join_source(self, meta, children):
        stream, alias = children
        if alias is None:
            return stream
        alias = self.check_reserved(alias, "an alias", f"as {alias}")
        return dataclasses.replace(stream, alias=alias, span=meta_span(meta))

    def inner_join(self, meta, children):
        return "inner"

    def left_outer_join(self, meta, children):
        return "left_outer"

    def right_outer_join(self, meta, children):
        return "right_outer"

    def full_outer_join(self, meta, children):
        return "full_outer"

    def join_input(self, meta, children):
        left, uni_left, join_type, right, uni_right, on, within = children
        if uni_left is not None and uni_right is not None:
            raise SiddhiQLSyntaxError(
                "only one side of a join can be unidirectional", meta_span(meta), self.text
            )
        unidirectional = "left" if uni_left is not None else "right" if uni_right else None
        self._chain_kinds.clear()
        return JoinInputStream(
            left,
            right,
            join_type,
            on,
            unidirectional,
            within.millis if within is not None else None,
            meta_span(meta),
        )

    # -- pattern and sequence states --
    def stateful(self, meta, children):
        alias, stream = children
        if alias is not None:
            alias = self.check_reserved(alias, "a pattern state", f"{alias}=")
            stream = dataclasses.replace(stream, alias=alias)
        return StreamState(stream, meta_span(meta))

    def absent(self, meta, children):
        stream, for_time = children
        self._note("absent", meta_span(meta))
        state = StreamState(stream, stream.span)
        return AbsentState(
            state, for_time.millis if for_time is not None else None, meta_span(meta)
        )

    def count_exact(self, meta, children):
        n = int(str(children[0]))
        return (n, n)

    def count_between(self, meta, children):
        return (int(str(children[0])), int(str(children[1])))

    def count_at_least(self, meta, children):
        return (int(str(children[0])), None)

    def count_at_most(self, meta, children):
        return (0, int(str(children[0])))

    def count_state(self, meta, children):
        state, (low, high) = children
        span = meta_span(meta)
        if high is not None and high < low:
            raise SiddhiQLSyntaxError(
                f"count <{low}:{high}>: the maximum is below the minimum", span, self.text
            )
        self._note("count", span)
        return CountState(state, low, high, span)

    def _sequence_count(self, meta, state, low, high):
        span = meta_span(meta)
        self._note("sequence_count", span)
        return CountState(state, low, high, span)

    def one_or_more(self, meta, children):
        return self._sequence_count(meta, children[0], 1, None)

    def zero_or_more(self, meta, children):
        return self._sequence_count(meta, children[0], 0, None)

    def zero_or_one(self, meta, children):
        return self._sequence_count(meta, children[0], 0, 1)

    def logical_and(self, meta, children):
        return LogicalState("and", children[0], children[1], meta_span(meta))

    def logical_or(self, meta, children):
        return LogicalState("or", children[0], children[1], meta_span(meta))

    def state_group(self, meta, children):
        chain, within = children
        return Group(chain, within.millis if within is not None else None, meta_span(meta))

    def every(self, meta, children):
        inner = children[0]
        self._note("every", meta_span(meta))
        if isinstance(inner, Group):
            return EveryState(self._ungroup(inner.chain), inner.within_millis, meta_span(meta))
        return EveryState(inner, None, meta_span(meta))

    def followed_by(self, meta, children):
        self._note("pattern", meta_span(meta))
        return NextState(self._closed(children[0]), self._last(children[1]), meta_span(meta))

    def next_in_sequence(self, meta, children):
        self._note("sequence", meta_span(meta))
        return NextState(self._closed(children[0]), self._last(children[1]), meta_span(meta))

    def _last(self, element):
        """The newest state of a chain: a parenthesised group with `within` stays a Group
        until the chain is complete (Siddhi accepts `A -> (B and C) within T` at the end)."""
        if isinstance(element, Group) and element.within_millis is not None:
            return element
        return self._ungroup(element)

    def _closed(self, element):
        """A chain that another state follows: a trailing `(...) within` group is no longer
        at the end, so it is refused as `_ungroup` refuses it."""
        if isinstance(element, NextState) and isinstance(element.then, Group):
            self._ungroup(element.then)
        return self._ungroup(element)

    def _ungroup(self, element):
        if not isinstance(element, Group):
            return element
        if element.within_millis is not None:
            raise InvalidQueryError(
                "'within' on a parenthesised part of a pattern is only supported after 'every' "
                "or at the end of the whole pattern",
                element.span,
                self.text,
            )
        return self._ungroup(element.chain)

    def state_input(self, meta, children):
        chain, within = children
        kinds, self._chain_kinds = self._chain_kinds, {}
        within_millis = within.millis if within is not None else None
        if isinstance(chain, Group) and chain.within_millis is not None:
            if within_millis is not None:
                raise InvalidQueryError(
                    "a pattern has two 'within' clauses", meta_span(meta), self.text
                )
            within_millis, chain = chain.within_millis, chain.chain
        if isinstance(chain, NextState) and isinstance(chain.then, Group):
            # `A -> (B and C) within T`: the within after the last group bounds the last
            # state, as a trailing within of the whole pattern does in Siddhi 3.2
            if within_millis is not None:
                raise InvalidQueryError(
                    "a pattern has two 'within' clauses", meta_span(meta), self.text
                )
            within_millis = chain.then.within_millis
            chain = NextState(chain.first, self._ungroup(chain.then.chain), chain.span)
        chain = self._ungroup(chain)
        if isinstance(chain, StreamState) and chain.stream.alias is None and not kinds:
            if within_millis is not None:
                raise InvalidQueryError(
                    "'within' needs a pattern, a sequence or a join", meta_span(meta), self.text
                )
            return chain.stream
        kind = self._state_kind(kinds, meta)
        if kind == "sequence":
            self._check_sequence_every(chain, first=True)
        return StateInputStream(kind, chain, within_millis, meta_span(meta))

    def _check_sequence_every(self, element, first):
        """Siddhi 3.2's sequence grammar: `every` only on the first state, and an
        `every (...)` group there holds no `+`, `*`, `?` or `<n:m>` state."""
        if isinstance(element, NextState):
            self._check_sequence_every(element.first, first)
            self._check_sequence_every(element.then, False)
        elif isinstance(element, EveryState):
            if not first:
                raise SiddhiQLSyntaxError(
                    "in a sequence, 'every' is accepted only on the first state",
                    element.span,
                    self.text,
                )
            inner = element.inner
            if (
                not isinstance(inner, (StreamState, CountState))
                or self.text[element.span.start_pos : inner.span.start_pos].rstrip()[-1:] == "("
            ):
                for counted in _count_states(inner):
                    raise SiddhiQLSyntaxError(
                        "in a sequence, a counted state (+, *, ?, <n:m>) cannot be inside "
                        "'every (...)'; write 'every e1=A+, ...' without the parentheses",
                        counted.span,
                        self.text,
                    )

    def _state_kind(self, kinds, meta):
        if "pattern" in kinds and "sequence" in kinds:
            raise SiddhiQLSyntaxError(
                "a query cannot mix '->' (pattern) and ',' (sequence)", kinds["sequence"], self.text
            )
        if "sequence" in kinds:
            return "sequence"
        if "sequence_count" in kinds:
            if "pattern" in kinds:
                raise SiddhiQLSyntaxError(
                    "'+', '*' and '?' are for sequences; a pattern counts with <min:max>",
                    kinds["sequence_count"],
                    self.text,
                )
            return "sequence"
        return "pattern"


def _count_states(element):
    """The CountStates under a state element."""
    if isinstance(element, CountState):
        return [element]
    if isinstance(element, NextState):
        return _count_states(element.first) + _count_states(element.then)
    if isinstance(element, LogicalState):
        return _count_states(element.left) + _count_states(element.right)
    if isinstance(element, EveryState):
        return _count_states(element.inner)
    return []
