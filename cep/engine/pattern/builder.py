"""Runtime entry point for pattern and sequence queries: `build_state_query(query, ctx)`.

Chain: each input stream's junction -> a receiver -> the PatternProcessor (state machine) ->
the query selector (composite rows) -> [rate limiter] -> output."""

from cep.engine.pattern.compile import compile_pattern, selector_scope
from cep.engine.pattern.fast import build_fast

# re-exported: the join and partition builders import these from here too
from cep.engine.pattern.inputs import stream_definitions, with_tables  # noqa: F401
from cep.engine.pattern.plan import flatten
from cep.engine.pattern.runtime import PatternProcessor
from cep.engine.processor import Processor, link


def build_state_query(query, ctx, name=None):
    name = name or ctx.element_name
    nodes, _ = flatten(query.input.state)
    spans = {n.stream_id: n.state.stream.span for n in nodes}
    defs = stream_definitions([n.stream_id for n in nodes], spans, ctx)
    hook = with_tables(ctx)
    shared = compile_pattern(query.input, defs, scope_hook=hook, fixed=ctx.siddhi_fixed)
    if shared.absent_timed:
        shared.scheduler, shared.scheduler_rank = ctx.scheduler, ctx.scheduler.new_rank()
    scope = hook(selector_scope(shared, defs))
    selector = ctx.build_selector(query, scope, None)
    out_def = selector.code.output_definition(getattr(query.output, "target", name))
    out = ctx.build_output(query, out_def, selector)
    proc = build_fast(query, shared, defs, hook, scope, selector, out_def, ctx) or PatternProcessor(
        shared
    )
    link([proc, selector, out])
    register_chain(ctx, name, proc)
    for sid in shared.streams:
        j = ctx.junction_for(sid)
        # a named window: the pattern sees the rows arriving in it, not its expiries
        (j.subscribe_current if hasattr(j, "subscribe_current") else j.subscribe)(
            proc.receiver(sid)
        )
    return proc


def register_chain(ctx, name, head):
    """Register every stateful processor from `head` down the chain for snapshots."""
    p, i = head, 0
    while isinstance(p, Processor):
        if getattr(p, "stateful", False):
            ctx.register(f"{name}/{i}:{type(p).__name__}", p)
        p, i = p.next, i + 1
