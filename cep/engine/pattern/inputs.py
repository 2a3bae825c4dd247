"""The inputs of a pattern or sequence query at runtime: their stream definitions (tables and
unknown streams refused) and the scope hook that gives `cond in Table` the runtime's tables.
The pattern builder, the keyed partition kernel and the join builder all use these."""

from cep.errors import InvalidQueryError, UnknownStreamError


def stream_definitions(stream_ids, spans, ctx):
    """stream id -> definition for a query's inputs; rejects tables and unknown streams."""
    out = {}
    for sid in stream_ids:
        if ctx.plan.table(sid) is not None:
            raise InvalidQueryError(
                f"table '{sid}' cannot be a pattern or sequence input; only streams can",
                spans.get(sid),
            )
        j = ctx.junctions.get(sid)
        if j is None:
            raise UnknownStreamError(f"stream '{sid}' is not defined", spans.get(sid))
        out[sid] = j.definition
    return out


def with_tables(ctx):
    """A scope hook giving a scope `cond in Table` support over the runtime's tables."""

    def hook(scope):
        scope.tables = ctx.tables
        return scope

    return hook
