"""Validation of query inputs: which definitions they read, their handlers, and the scope the
rest of the query sees (single streams, joins, patterns and sequences)."""

from cep.catalog import ext, ext_processors, windows as catalog_windows
from cep.compiler import signatures
from cep.compiler.scope import AttributeScope, CompositeScope
from cep.compiler.types import expression_type, require_bool
from cep.errors import (
    DuplicateDefinitionError,
    InvalidQueryError,
    TypeMismatchError,
    UnknownFunctionError,
    UnknownWindowError,
)
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
    TableDefinition,
    Variable,
    Window,
    WindowDefinition,
)
from cep.model.definitions import Attribute
from cep.model.expressions import Constant, Negate, TimeConstant

# stream functions of Siddhi 3 core that pass events through unchanged: name -> (fewest,
# most parameters), and what each does (the reference pages show it)
STREAM_FUNCTIONS = {"log": (0, 3)}
STREAM_FUNCTION_DOCS = {
    "log": "log([priority, [message, [is.event.logged]]]): logs each batch of events at INFO "
    "on the `cep.log` logger, with the stream id, and passes it on unchanged; the "
    "parameters (Siddhi's) are type-checked, not used",
}


def input_scope(stream_input, ctx):
    """Check `stream_input` and return (scope, attributes of `select *`)."""
    if isinstance(stream_input, SingleInputStream):
        return _single_scope(stream_input, ctx)
    if isinstance(stream_input, JoinInputStream):
        return _join_scope(stream_input, ctx)
    if isinstance(stream_input, StateInputStream):
        return _state_scope(stream_input, ctx)
    raise InvalidQueryError(f"unknown input {stream_input!r}")


def _check_named_window(stream, definition, ctx, where):
    """A named window read by a query: its own window is the only one (Siddhi: "Cannot create
    length window for the window stream W"); a join side takes it as it is; a partition
    cannot read it (its one instance is shared by all its readers, not per key)."""
    if not isinstance(definition, WindowDefinition):
        return
    name = stream.stream_id
    if getattr(ctx, "inner", None) is not None:
        raise InvalidQueryError(
            f"'{name}' is a named window: a query inside a partition "
            f"cannot read it (the window is shared, not per key)",
            stream.span,
        )
    for h in stream.handlers:
        if isinstance(h, Window):
            raise InvalidQueryError(
                f"'{name}' is a named window (its window is "
                f"{definition.window.name}): a query reading it cannot "
                f"add another window",
                h.span,
            )
        if where == "join" and not isinstance(h, Window):
            raise InvalidQueryError(
                f"'{name}' is a named window: a join side reading it "
                f"cannot have a filter or stream function; filter in "
                f"the join condition instead",
                h.span,
            )


def _scope_for(stream, definition):
    kind = "table" if isinstance(definition, TableDefinition) else "stream"
    label = f"{kind} '{definition.id}'" + (f" (as {stream.alias})" if stream.alias else "")
    refs = (stream.alias, stream.stream_id) if stream.alias else (stream.stream_id,)
    return AttributeScope(refs, definition.attributes, label, stream.alias)


def _single_scope(stream, ctx):
    definition = ctx.input_definition(stream)
    if isinstance(definition, TableDefinition):
        raise InvalidQueryError(
            f"table '{stream.stream_id}' cannot be the input of a query: join it with a "
            f"stream or test it with '... in {stream.stream_id}'",
            stream.span,
        )
    _check_named_window(stream, definition, ctx, "single")
    scope = _scope_for(stream, definition)
    extra = check_handlers(stream, scope, ctx)
    if extra:  # stream processors append attributes: the rest of the query sees them
        attributes = definition.attributes + tuple(extra)
        return _scope_for(stream, _Extended(definition.id, attributes)), attributes
    return scope, definition.attributes


class _Extended:
    """A definition with the attributes stream processors append."""

    def __init__(self, id_, attributes):
        self.id, self.attributes = id_, attributes


def _join_scope(join, ctx):
    sides = []
    for stream in (join.left, join.right):
        definition = ctx.input_definition(stream)
        if isinstance(definition, TableDefinition) and stream.handlers:
            raise InvalidQueryError(
                f"table '{stream.stream_id}' in a join cannot have a filter or window", stream.span
            )
        _check_named_window(stream, definition, ctx, "join")
        sides.append((stream, definition, _scope_for(stream, definition)))
    if all(isinstance(d, TableDefinition) for _, d, _ in sides):
        raise InvalidQueryError(
            "a join needs at least one stream; both sides are tables", join.span
        )
    _check_side_windows(sides)
    (left, _, left_scope), (right, _, right_scope) = sides
    if left.reference == right.reference:
        raise DuplicateDefinitionError(
            f"both sides of the join are '{left.reference}': give them aliases ('as a', 'as b')",
            right.span,
        )
    scope = CompositeScope((left_scope, right_scope), strict=True)
    for stream, _, side_scope in sides:
        _no_appending(
            stream, check_handlers(stream, CompositeScope((side_scope, scope)), ctx), "a join side"
        )
    if join.on is not None:
        require_bool(join.on, scope, "the join condition", tables=ctx.tables)
    return scope, sides[0][1].attributes + sides[1][1].attributes


def _check_side_windows(sides):
    """Two stream sides: each side's last handler, if any, must be a window (Siddhi 3.2: "last
    processor ... is not an instance of FindableProcessor hence join cannot be proceed"). A
    stream side filtered without a window beside a table is accepted (Siddhi 3.2 refuses it
    too; this engine looks the table up per event)."""
    if any(isinstance(d, TableDefinition) for _, d, _ in sides):
        return
    for stream, definition, _ in sides:
        last = stream.handlers[-1] if stream.handlers else None
        if isinstance(last, StreamFunction) and last.namespace:
            continue  # a stream processor on a join side: refused with its own reason
        if (
            last is not None
            and not isinstance(last, Window)
            and not isinstance(definition, WindowDefinition)
        ):
            raise InvalidQueryError(
                f"join side '{stream.reference}' has a filter but no window: Siddhi 3.2 "
                f"needs a window as the side's last handler to join against (add "
                f"#window.length(1), or move the filter into the join condition)",
                stream.handlers[-1].span,
            )


def state_streams(element):
    """The StreamStates of a pattern or sequence, in source order."""
    if isinstance(element, StreamState):
        return [element]
    if isinstance(element, (CountState, AbsentState)):
        return [element.state]
    if isinstance(element, EveryState):
        return state_streams(element.inner)
    if isinstance(element, (NextState,)):
        return state_streams(element.first) + state_streams(element.then)
    if isinstance(element, LogicalState):
        return state_streams(element.left) + state_streams(element.right)
    raise InvalidQueryError(f"unknown pattern element {element!r}")


def _check_absent(element, in_and=False, sequence=False):
    """`not S` needs `for <time>` unless it is one side of an `and` beside an event that
    occurs; sequences have no `not` (patterns only)."""
    if isinstance(element, AbsentState):
        if sequence:
            raise InvalidQueryError(
                "'not ...' is supported in patterns ('->'), not in sequences (',')", element.span
            )
        if element.for_millis is None and not in_and:
            raise InvalidQueryError(
                "'not S' needs 'for <time>' unless it is one side of an 'and' (not A and e2=B)",
                element.span,
            )
    elif isinstance(element, LogicalState):
        sides = (element.left, element.right)
        if all(isinstance(x, AbsentState) for x in sides) and any(
            x.for_millis is None for x in sides
        ):
            raise InvalidQueryError(
                "'not S' without 'for <time>' needs an event that occurs beside it", element.span
            )
        for side in sides:
            _check_absent(side, element.op.lower() == "and", sequence)
    elif isinstance(element, NextState):
        _check_absent(element.first, sequence=sequence)
        _check_absent(element.then, sequence=sequence)
    elif isinstance(element, EveryState):
        _check_absent(element.inner, sequence=sequence)


def _check_scoped(element, scoped=None):
    """`every (...) within T` groups (scoped to the group, as Siddhi 4) hold plain and
    logical states only and do not nest."""
    if isinstance(element, EveryState):
        if element.within_millis is not None:
            if scoped is not None:
                raise InvalidQueryError(
                    "`every (...) within` groups cannot be nested", element.span
                )
            scoped = element
        _check_scoped(element.inner, scoped)
    elif isinstance(element, (CountState, AbsentState)):
        if scoped is not None:
            kind = "a counting state" if isinstance(element, CountState) else "`not ...`"
            raise InvalidQueryError(
                f"{kind} inside an `every (...) within` group is not "
                f"supported; put `within` after the whole pattern",
                element.span,
            )
    elif isinstance(element, NextState):
        _check_scoped(element.first, scoped)
        _check_scoped(element.then, scoped)
    elif isinstance(element, LogicalState):
        _check_scoped(element.left, scoped)
        _check_scoped(element.right, scoped)


def _state_scope(state_input, ctx):
    _check_absent(state_input.state, sequence=state_input.kind == "sequence")
    _check_scoped(state_input.state)
    entries, seen = [], {}
    for state in state_streams(state_input.state):
        stream = state.stream
        definition = ctx.input_definition(stream)
        if isinstance(definition, TableDefinition):
            raise InvalidQueryError(
                f"table '{stream.stream_id}' cannot be a pattern or sequence input", stream.span
            )
        _check_named_window(stream, definition, ctx, state_input.kind)
        if stream.window is not None:
            raise InvalidQueryError(
                f"a {state_input.kind} state cannot have a window", stream.window.span
            )
        if stream.alias is not None and stream.alias in seen:
            raise DuplicateDefinitionError(
                f"state alias '{stream.alias}' is used twice in this {state_input.kind}",
                stream.span,
            )
        seen[stream.alias] = stream
        entries.append((stream, _scope_for(stream, definition), definition))
    everything = CompositeScope(tuple(s for _, s, _ in entries))
    for stream, own, _ in entries:
        _no_appending(
            stream,
            check_handlers(stream, CompositeScope((own, everything)), ctx),
            f"a {state_input.kind} state",
        )
    attributes = tuple(a for _, _, d in entries for a in d.attributes)
    return everything, attributes


def _no_appending(stream, extra, where):
    if extra:
        handler = next(h for h in stream.handlers if isinstance(h, StreamFunction) and h.namespace)
        raise InvalidQueryError(
            f"stream processor #{handler.namespace}:{handler.name} is "
            f"not supported on {where}: use it in a query of its own "
            f"that inserts into a stream",
            handler.span,
        )


def check_handlers(stream, scope, ctx):
    """Filters are bool; windows and stream functions exist and get fitting parameters.
    Returns the attributes stream processors append (Attribute list; handlers after one see
    them)."""
    windows, extra = 0, []
    for handler in stream.handlers:
        if extra:
            refs = (stream.alias, stream.stream_id)
            scope = CompositeScope((scope, AttributeScope(refs, extra, "appended attributes")))
        if isinstance(handler, Filter):
            require_bool(handler.expression, scope, "a filter", tables=ctx.tables)
        elif isinstance(handler, Window):
            windows += 1
            if windows > 1:
                raise InvalidQueryError("a stream can have only one window", handler.span)
            check_window(handler, scope)
        elif isinstance(handler, StreamFunction):
            if handler.namespace:
                extra = extra + _check_stream_processor(handler, scope)
            else:
                _check_stream_function(handler, scope)
    return extra


def _check_stream_processor(handler, scope):
    """A namespaced stream processor exists and its parameters fit: -> appended Attributes."""
    refused = ext.refusal(handler.namespace, handler.name)
    if refused is not None:  # geo, pmml, CEP 4.0 sample extensions
        raise UnknownFunctionError(
            f"'#{handler.namespace}:{handler.name}' is not supported: {refused}", handler.span
        )
    entry = ext_processors.lookup_stream_processor(handler.namespace, handler.name)
    if entry is None:
        raise UnknownFunctionError(
            f"'#{handler.namespace}:{handler.name}' is not a known stream processor (known: "
            f"{', '.join(sorted(ext_processors.known_stream_processors()))})",
            handler.span,
        )
    types = [expression_type(p, scope) for p in handler.params]
    appended = entry.processor_class().signature(handler.params, types, handler)
    return [Attribute(name, attr_type) for name, attr_type in appended]


def _check_stream_function(handler, scope):
    arity = None if handler.namespace else STREAM_FUNCTIONS.get(handler.name)
    full = f"{handler.namespace}:{handler.name}" if handler.namespace else handler.name
    refused = ext.refusal(handler.namespace, handler.name)
    if refused is not None:
        raise UnknownFunctionError(f"'#{full}' is not supported: {refused}", handler.span)
    if arity is None:
        raise UnknownFunctionError(f"'#{full}' is not a known stream function", handler.span)
    if not arity[0] <= len(handler.params) <= arity[1]:
        raise TypeMismatchError(
            f"#{full}() takes {arity[0]} to {arity[1]} parameters", handler.span
        )
    for p in handler.params:
        expression_type(p, scope)


def check_window(window, scope):
    """The window exists and its parameters fit its signature (count, types, constness)."""
    signature = (
        catalog_windows.lookup(window.name, window.namespace)
        if window.namespace
        else signatures.lookup(signatures.WINDOWS, window.name)
    )
    if signature is None:
        full = f"{window.namespace}:{window.name}" if window.namespace else window.name
        refused = ext.refusal(window.namespace, window.name) if window.namespace else None
        if refused is not None:
            raise UnknownWindowError(f"'{full}' is not supported: {refused}", window.span)
        known = ", ".join(signatures.WINDOWS)
        raise UnknownWindowError(f"'{full}' is not a known window (known: {known})", window.span)
    args, i = window.params, 0
    for param in signature.params:
        if param.repeat:
            for arg in args[i:]:
                _check_window_param(window, param, arg, scope)
            i = len(args)
            break
        if i >= len(args):
            if param.optional:
                break
            raise TypeMismatchError(
                f"window {window.name}() needs parameter '{param.name}'", window.span
            )
        _check_window_param(window, param, args[i], scope)
        i += 1
    if i < len(args):
        raise TypeMismatchError(
            f"window {window.name}() takes at most {i} parameters, not {len(args)}", args[i].span
        )


def _check_window_param(window, param, arg, scope):
    found = expression_type(arg, scope)
    if param.constant and signatures.constant_type(arg) is None:
        raise TypeMismatchError(
            f"window {window.name}() parameter '{param.name}' must be a constant", arg.span
        )
    if param.attribute and not isinstance(arg, Variable):
        raise TypeMismatchError(
            f"window {window.name}() parameter '{param.name}' must be an attribute", arg.span
        )
    if found not in param.types:
        wanted = " or ".join(t.value for t in param.types)
        raise TypeMismatchError(
            f"window {window.name}() parameter '{param.name}' must be {wanted}, not {found}",
            arg.span,
        )
    value = _constant_number(arg)
    if value is not None and param.name in _SPANS and value < _SPANS[param.name][0]:
        shown = f"{value} ms" if param.name == "window.time" else value
        raise TypeMismatchError(
            f"window {window.name}() parameter '{param.name}' must be "
            f"{_SPANS[param.name][1]}, not {shown}",
            arg.span,
        )


# window parameters that are spans: (the smallest value allowed, what it must be)
_SPANS = {
    "window.time": (1, "a positive time (at least 1 millisecond)"),
    "window.length": (0, "a length of 0 or more"),
}


def _constant_number(arg):
    """The value of a numeric or time constant (negated ones too), else None."""
    if isinstance(arg, TimeConstant):
        return arg.millis
    if (
        isinstance(arg, Constant)
        and isinstance(arg.value, (int, float))
        and not isinstance(arg.value, bool)
    ):
        return arg.value
    if isinstance(arg, Negate):
        inner = _constant_number(arg.operand)
        return None if inner is None else -inner
    return None
