"""Building a namespaced stream processor into a single-stream query chain."""

from cep.catalog import ext_processors
from cep.engine.expressions import SingleStreamScope, compile_expression
from cep.engine.windows.base import WindowEnv
from cep.errors import UnknownFunctionError
from cep.model import StreamDefinition
from cep.model.definitions import Attribute


def build_stream_processor(handler, scope, ctx, stream):
    """-> (processor, the scope after it: the input definition with its appended attributes)."""
    entry = ext_processors.lookup_stream_processor(handler.namespace, handler.name)
    if entry is None:
        raise UnknownFunctionError(
            f"unknown stream processor #{handler.namespace}:{handler.name}()", handler.span
        )
    cls = entry.processor_class()
    types = [compile_expression(p, scope).type for p in handler.params]
    appended = cls.signature(handler.params, types, handler)
    env = WindowEnv(ctx.scheduler, ctx.playback, None)
    processor = cls.build(handler, scope, env)
    processor.extra = len(appended)
    d = scope.definition
    extended = StreamDefinition(
        d.id,
        tuple(d.attributes) + tuple(Attribute(n, t) for n, t in appended),
        d.annotations,
        d.text,
    )
    new_scope = SingleStreamScope(extended, [stream.alias])
    new_scope.tables = scope.tables
    return processor, new_scope
