"""Query outputs: insert into a stream (expired rows become ordinary current events there),
and dispatch of table outputs to cep.engine.table."""

from cep.engine.processor import Processor
from cep.engine.table import build_table_output
from cep.errors import EngineError
from cep.model import InsertInto


class InsertIntoStream(Processor):
    """Puts a query's output rows into a stream junction as CURRENT events."""

    def __init__(self, junction, convert_kinds):
        super().__init__()
        self.junction = junction
        self.convert_kinds = convert_kinds  # expired rows may reach here

    def process(self, batch):
        if self.convert_kinds:
            batch = [(t, r, 0) for t, r, _ in batch]
        self.junction.process(batch)

    def process_columns(self, cols):
        """A columnar result (always CURRENT rows), as the target stream's Columns."""
        d = self.junction.definition
        if cols.definition is not d:
            cols = type(cols)(d, cols.timestamps, cols.values, cols.nulls)
        self.junction.process_columns(cols)

    def clone(self):
        return InsertIntoStream(self.junction, self.convert_kinds)


def build_output(query, ctx, out_def):
    """The processor that ends a query chain, for `query.output`."""
    out = query.output
    target = out.target
    if isinstance(out, InsertInto) and ctx.plan.table(target) is None:
        if out.inner:
            hook = getattr(ctx, "inner_junction", None)
            if hook is None:
                raise EngineError(f"inner stream '#{target}' outside a partition")
            junction = hook(target, out_def)
        else:
            junction = ctx.junction_for(target, out_def)
        return InsertIntoStream(junction, out.event_type != "current")
    return build_table_output(query, ctx, out_def)
