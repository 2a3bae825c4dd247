"""Builds the processor chain of a single-stream query:
`junction -> [filter | window | stream function]* -> selector -> [rate limiter] -> output`.
Leading filters with no window are fused into a stateless selector (one comprehension)."""

from cep.catalog import windows as catalog_windows
from cep.engine.expressions import SingleStreamScope, compile_filter
from cep.engine.named_window import is_named_window
from cep.engine.processor import Processor, link
from cep.engine.selector import has_aggregators
from cep.engine.windows import WindowProcessor, build_window
from cep.engine.windows.base import WindowEnv
from cep.errors import InvalidQueryError, UnknownFunctionError, UnknownStreamError
from cep.model import And, Filter, StreamFunction, Window


class FilterProcessor(Processor):
    def __init__(self, keep):
        super().__init__()
        self.keep = keep

    def process(self, batch):
        out = self.keep(batch)
        if out:
            self.next.process(out)

    def clone(self):
        return FilterProcessor(self.keep)


class LogProcessor(Processor):
    """`#log(...)`: logs each batch and passes it on."""

    def __init__(self, prefix):
        super().__init__()
        self.prefix = prefix

    def process(self, batch):
        import logging

        logging.getLogger("cep.log").info("%s %s", self.prefix, batch)
        self.next.process(batch)

    def clone(self):
        return LogProcessor(self.prefix)


def input_definition(stream, ctx):
    """The definition of a query's input stream, or a clear error."""
    if ctx.plan.table(stream.stream_id) is not None:
        raise InvalidQueryError(
            f"table '{stream.stream_id}' cannot be a query's input stream; "
            f"join it with a stream instead",
            stream.span,
        )
    j = ctx.junctions.get(stream.stream_id)
    if j is None:
        raise UnknownStreamError(f"stream '{stream.stream_id}' is not defined", stream.span)
    return j.definition


def build_handlers(stream, scope, ctx, owner_ok=True, after_batch=False):
    """Processors for a stream's handlers -> (list, has window, has batch window, the input
    definition with the attributes stream processors append, its scope). `after_batch`: the
    stream is a named batch window (filters pass its RESET events)."""
    procs, window, batch = [], False, after_batch
    for i, h in enumerate(stream.handlers):
        if isinstance(h, Filter):
            procs.append(
                FilterProcessor(compile_filter(h.expression, scope, ctx.env, resets=batch))
            )
        elif isinstance(h, Window):
            owner = (
                stream.stream_id
                if (i == 0 and owner_ok and not stream.inner and ctx.timer_owners)
                else None
            )
            w = build_window(
                h, scope, WindowEnv(ctx.scheduler, ctx.playback, owner, ctx.siddhi_fixed)
            )
            procs.append(w)
            window, batch = True, w.is_batch
        elif isinstance(h, StreamFunction):
            if h.namespace is None and h.name == "log":
                procs.append(LogProcessor(stream.stream_id))
            elif h.namespace:
                from cep.engine.ext.build import build_stream_processor

                p, scope = build_stream_processor(h, scope, ctx, stream)
                procs.append(p)
            else:
                raise UnknownFunctionError(f"unknown stream function #{h.name}()", h.span)
    return procs, window, batch, scope


def build_single_query(query, ctx, name):
    """Build and subscribe the chain of a query over one stream; returns its head."""
    stream = query.input
    definition = input_definition(stream, ctx)
    scope = SingleStreamScope(definition, [stream.alias])
    scope.tables = ctx.tables
    handlers = stream.handlers
    pre = None
    named = is_named_window(ctx.junctions.get(stream.stream_id))
    if named:  # the rows come out of the shared window: current, expired, a batch's reset
        nbatch = ctx.junctions[stream.stream_id].is_batch
        procs, window, batch, scope = build_handlers(stream, scope, ctx, after_batch=nbatch)
        definition = scope.definition
        # Siddhi 3.2's reader of a named window selects per chunk the window emits, as after
        # a batch window: with aggregates one row per chunk (the last), without, every row
        window = batch = True
    elif (
        handlers
        and all(isinstance(h, Filter) for h in handlers)
        and not has_aggregators(query.selector)
    ):
        pre = handlers[0].expression
        for h in handlers[1:]:
            pre = And(pre, h.expression)
        procs, window, batch = [], False, False
    else:
        procs, window, batch, scope = build_handlers(stream, scope, ctx)
        definition = scope.definition
    fuse, owner = _fuse_spec(stream, query, scope, ctx) if not named else (None, None)
    if fuse is not None:
        procs = procs[:-1]  # the window's work moves into the fused selector
        owner = stream.stream_id if (not procs and not stream.inner and ctx.timer_owners) else None
    selector = ctx.build_selector(
        query,
        scope,
        definition,
        window=window,
        batch_window=batch,
        pre_filter=pre,
        fuse=fuse,
        owner=owner,
        drop_empty=not named and _expires_arrivals(stream, procs, fuse),
    )
    if not procs and not named:  # the selector heads the chain: it may take columnar batches
        _columnar(selector, query, scope, definition, pre, fuse, ctx.wanted_kinds(query))
    elif len(procs) == 1 and len(handlers) == 1 and not named and ctx.timer_owners:
        _window_kernel(procs[0], selector, query, scope, definition)
    out_def = selector.code.output_definition(getattr(query.output, "target", name))
    out = ctx.build_output(query, out_def, selector)
    chain = procs + [selector]
    head = link(chain + [out])
    for i, p in enumerate(chain + _rest(out)):
        if getattr(p, "stateful", False):
            ctx.register(f"{name}/{i}:{type(p).__name__}", p)
    ctx.junction_for(stream.stream_id).subscribe(head)
    return head


def _fuse_spec(stream, query, scope, ctx):
    """(FuseSpec, None) when the query's window can be fused into its selector, else
    (None, None)."""
    from cep.engine.fused import FuseSpec, fusable_window
    from cep.engine.windows.base import WindowParams

    w = fusable_window(stream, query.selector)
    if w is None:
        return None, None
    kind = w.name.lower()
    args = catalog_windows.lookup(w.name).processor_class().parse(WindowParams(w, scope))
    if kind == "timelength":  # (T, n); the fused loop is the playback one
        return (FuseSpec(kind, args[0], True, args[1]), None) if ctx.playback else (None, None)
    if kind == "externaltime":  # (getter, T): fused when the time is a plain attribute
        i = _attribute_index(w.params[0], scope)
        return (FuseSpec(kind, args[1], ctx.playback, i), None) if i is not None else (None, None)
    (param,) = args
    return FuseSpec(kind, param, ctx.playback), None


def _columnar(*args):
    """Attach a columnar kernel (cep.engine.columnar) when numpy is there; without it every
    query keeps the row path, and send_columns is the only call that fails."""
    try:
        from cep.engine.columnar import attach_columnar
    except ImportError:
        return
    attach_columnar(*args)


def _attribute_index(param, scope):
    """The row index of a window parameter that is a plain attribute, else None."""
    from cep.engine.expressions import compile_expression
    from cep.model import Variable

    if not isinstance(param, Variable):
        return None
    src = compile_expression(param, scope).source
    inner = src[2:-1] if src.startswith("r[") and src.endswith("]") else ""
    return int(inner) if inner.isdigit() else None


def _window_kernel(window, selector, query, scope, definition):
    """A columnar kernel for a window heading the chain with its selector
    (cep.engine.columnar.batchwin), when numpy is there and one applies."""
    from cep.engine.windows.batch import ExternalTimeBatchWindow, LengthBatchWindow
    from cep.engine.windows.keyed import UniqueWindow

    if type(window) not in (LengthBatchWindow, ExternalTimeBatchWindow, UniqueWindow):
        return
    try:
        from cep.engine.columnar import batchwin, uniquewin
    except ImportError:
        return
    target = getattr(query.output, "target", "output")
    if type(window) is UniqueWindow:
        params = query.input.handlers[0].params
        u = _attribute_index(params[0], scope) if len(params) == 1 else None
        uniquewin.install(window, selector, definition, target, u)
        return
    ext = None
    if type(window) is ExternalTimeBatchWindow:
        ext = _attribute_index(query.input.handlers[0].params[0], scope)
    batchwin.install(window, selector, definition, target, ext)


def _expires_arrivals(stream, procs, fuse):
    """Whether the selector sees each event expire exactly once after it arrived: filters,
    then one window that guarantees it (cep.engine.windows.base), as the last handler."""
    if fuse is not None:
        return True
    windows = [p for p in procs if isinstance(p, WindowProcessor)]
    return (
        len(windows) == 1
        and procs[-1] is windows[0]
        and windows[0].expires_arrivals
        and all(isinstance(h, Filter) for h in stream.handlers[:-1])
    )


def _rest(p):
    out = []
    while p is not None and isinstance(p, Processor):
        out.append(p)
        p = p.next
    return out


__all__ = ["build_single_query", "build_handlers", "FilterProcessor", "WindowProcessor"]
