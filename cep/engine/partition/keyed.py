"""The fast form of a partition whose queries are all patterns/sequences with stateless
selectors: per key only a small state machine (`dict[key] -> StateMachine`), while the
compiled conditions, the selector and the output are shared by all keys. This is what keeps
100,000 keys cheap: a new key costs one small object, not a cloned query chain.

Better still, a pattern whose start state is `every` (so the start is the same for every key)
and whose other states are plain stream states needs no per-key object at all: one machine
serves every key, with the partition key added to each state's index key, so a partial match
only ever meets events of its own key. Then the whole batch goes through in one call, in
event order. The commonest such pattern, `every e1=S -> e2=S[...]`, runs as a generated loop
instead of the general machine (kernel.py), emitting the select clause's rows itself when the
clause is a plain projection."""

from cep.engine.partition.kernel import PatternKernel, build_kernel
from cep.engine.pattern.inputs import stream_definitions, with_tables
from cep.engine.pattern.compile import compile_pattern, selector_scope
from cep.engine.pattern.plan import STREAM, flatten
from cep.engine.expressions import SingleStreamScope, compile_expression, make_function
from cep.model import ValuePartitionKey
from cep.engine.processor import link
from cep.engine.events import CURRENT
from cep.engine.selector import _Parts as SelectParts, has_aggregators
from cep.model import InsertInto, StateInputStream


def qualifies(partition):
    """True when every query is a pattern/sequence over partitioned streams only, with no
    aggregation, rate limit or inner stream."""
    keyed = {k.stream_id for k in partition.keys}
    for q in partition.queries:
        if not isinstance(q.input, StateInputStream) or q.rate is not None:
            return False
        if has_aggregators(q.selector) or q.selector.group_by:
            return False
        if isinstance(q.output, InsertInto) and q.output.inner:
            return False
        nodes, _ = flatten(q.input.state)
        if any(n.stream_id not in keyed or n.state.stream.inner for n in nodes):
            return False
    return True


class KeyedPatterns:
    """The queries' shared parts, and the per-key machines."""

    def __init__(self, partition, ctx, name):
        self.queries = []  # (shared machine, selector head)
        pkeys = _partition_key_functions(partition, ctx)
        merged, kernels = [], []
        for i, q in enumerate(partition.queries):
            nodes, _ = flatten(q.input.state)
            spans = {n.stream_id: n.state.stream.span for n in nodes}
            defs = stream_definitions([n.stream_id for n in nodes], spans, ctx)
            hook = with_tables(ctx)
            shared = compile_pattern(q.input, defs, scope_hook=hook, fixed=ctx.siddhi_fixed)
            if shared.absent_timed:
                shared.scheduler = ctx.scheduler
                shared.scheduler_rank = ctx.scheduler.new_rank()
            scope = hook(selector_scope(shared, defs))
            selector = ctx.build_selector(q, scope, None)
            out_def = selector.code.output_definition(getattr(q.output, "target", name))
            link([selector, ctx.build_output(q, out_def, selector)])
            kernel = pkeys and build_kernel(
                shared, defs, *pkeys[nodes[0].stream_id].kernel, hook, _projection(q, scope, ctx)
            )
            if kernel:
                kernel.scheduler = ctx.scheduler  # its clock restarts end runs (kernel.py)
            if kernel and kernel.projects:
                kernel.vector = _vector(
                    kernel, partition, defs[nodes[0].stream_id], q, scope, out_def
                )
            kernels.append(kernel)
            merged.append(kernel or (pkeys is not None and _merge_keys(shared, pkeys)))
            self.queries.append((shared, selector))
        self.streams = {sid for shared, _ in self.queries for sid in shared.streams}
        self.machines = {}
        self.merged = None
        self.scheduler, self.runs = ctx.scheduler, ctx.scheduler.restarts
        if all(merged):
            self.merged = [k or shared.machine() for k, (shared, _) in zip(kernels, self.queries)]
            for m, (_, selector) in zip(self.merged, self.queries):
                m.on_output = selector.process
            # a kernel that projects hands its rows to what follows the selector
            self.sinks = [
                selector.next if getattr(m, "projects", False) else selector
                for m, (_, selector) in zip(self.merged, self.queries)
            ]

    def new_key(self, key):
        ms = self.machines[key] = [shared.machine() for shared, _ in self.queries]
        for m, (_, selector) in zip(ms, self.queries):
            m.on_output = selector.process  # matches completed by a timer
        return ms

    def dispatch(self, stream_id, groups, seen):
        """Feed `(key, events)` groups; matches of all keys leave in one batch per query."""
        if self.merged is not None:
            return
        machines = self.machines
        outs = [[] for _ in self.queries]
        for key, events in groups:
            ms = machines.get(key)
            if ms is None:
                ms = self.new_key(key)
            seen[key] = events[-1][0]
            for m, out in zip(ms, outs):
                m.process(stream_id, events, out)
        for (_, selector), out in zip(self.queries, outs):
            if out:
                selector.process(out)

    def process_columns(self, stream_id, cols):
        """A columnar batch through the merged kernels' columnar forms, each query's output
        leaving before the next query runs, as in `process_merged`; False (nothing done)
        when a kernel lacks one or refuses the batch: then it goes as rows."""
        if self.merged is None or not all(
            getattr(m, "vector", None) is not None and m.vector.accepts(cols) for m in self.merged
        ):
            return False
        for m, sink in zip(self.merged, self.sinks):
            res = m.process_columns(stream_id, cols)
            if res is not None:
                emit_to(sink, res)
        return True

    def columnar_targets(self):
        """The stream junctions the columnar kernels insert into, or None when a query
        has no columnar form or does not insert into a stream."""
        if self.merged is None or any(getattr(m, "vector", None) is None for m in self.merged):
            return None
        js = [getattr(sink, "junction", None) for sink in self.sinks]
        if any(
            j is None or type(sink).__name__ != "InsertIntoStream"
            for j, sink in zip(js, self.sinks)
        ):
            return None
        return js

    def process_merged(self, stream_id, batch):
        """One machine for all keys: the whole batch in one call, in event order."""
        if self.scheduler.restarts != self.runs:
            self._end_runs()
        for m, sink in zip(self.merged, self.sinks):
            out = []
            m.process(stream_id, batch, out)
            if out:
                sink.process(out)

    def _end_runs(self):
        """The playback clock restarted (a key-by-key feed, cep.engine.clock): the keys fed
        so far have ended their runs, so a merged general machine starts afresh, as the
        kernel drops its partials (kernel.py `_end_runs`): else the earlier runs' partials
        stop its `within` expiry in filing order, and every later key's stay."""
        self.runs = self.scheduler.restarts
        for i, (m, (shared, _)) in enumerate(zip(self.merged, self.queries)):
            if not isinstance(m, PatternKernel):  # the kernel does its own
                fresh = self.merged[i] = shared.machine()
                fresh.on_output = m.on_output

    def drop(self, key):
        for m in self.machines.pop(key, ()):
            m.on_output = None  # a purged key's pending deadlines must not emit any more

    def get_state(self):
        if self.merged is not None:
            return {"merged": [m.get_state() for m in self.merged]}
        return {k: [m.get_state() for m in ms] for k, ms in self.machines.items()}

    def set_state(self, state):
        self.runs = self.scheduler.restarts
        if self.merged is not None:
            for m, st in zip(self.merged, state["merged"]):
                m.set_state(st)
            return
        self.machines = {}
        for key, states in state.items():
            for m, st in zip(self.new_key(key), states):
                m.set_state(st)


def _partition_key_functions(partition, ctx):
    """stream id -> key(r) for value partitions (None when a range key is present)."""
    out = {}
    for k in partition.keys:
        if not isinstance(k, ValuePartitionKey):
            return None
        c = compile_expression(
            k.expression, SingleStreamScope(ctx.junctions[k.stream_id].definition)
        )
        out[k.stream_id] = make_function(
            "pkey", f"def pkey(r):\n    return {c.source}\n", c.globals
        )
        out[k.stream_id].kernel = (c.source, c.globals)  # inlined by the pattern kernel
    return out


def _merge_keys(shared, pkeys):
    """Add the partition key to every non-start state's index; False when not possible."""
    nodes, starts = shared.nodes, shared.starts
    if shared.sequence or len(starts) != 1 or not shared.start_every:
        return False
    start = nodes[starts[0]]
    if start.kind != STREAM or start.slot not in shared.fresh_every:
        return False
    if any(n.kind != STREAM for n in nodes if n.slot != start.slot):
        return False
    p_start, s0 = pkeys[start.stream_id], start.slot
    for n in nodes:
        if n.slot != start.slot:
            _augment(n, pkeys[n.stream_id], p_start, s0)
    shared.refresh()
    return True


def _augment(node, p_row, p_start, s0):
    rk, pk = node.row_key, node.partial_key
    if rk is None:
        node.row_key = p_row
        node.partial_key = lambda p: p_start(p[s0])
        return

    def row_key(r):
        k = rk(r)
        return None if k is None else (p_row(r), k)

    def partial_key(p):
        k = pk(p)
        return None if k is None else (p_start(p[s0]), k)

    node.row_key, node.partial_key = row_key, partial_key


def _vector(kernel, partition, definition, query, scope, out_def):
    """The kernel's columnar form (vector.py), or None."""
    from cep.engine.partition.vector import build_vector
    from cep.engine.selector import output_items

    sel = query.selector
    if sel.select_all or not sel.attributes:
        return None
    key = (
        None
        if partition is None
        else next(k.expression for k in partition.keys if k.stream_id == definition.id)
    )
    return build_vector(
        kernel.model,
        definition,
        key,
        output_items(sel, scope, definition),
        out_def,
        kernel.within,
        kernel.model["count_null"],
    )


def emit_to(sink, cols):
    """Columns to a processor: as Columns when it takes them, else as rows."""
    pc = getattr(sink, "process_columns", None)
    if pc is not None:
        pc(cols)
    else:
        sink.process(cols.events())


def _projection(query, scope, ctx):
    """(compiled select expressions, globals) of a plain projection the pattern kernel can
    emit itself: no aggregate, having, order by or limit, current events wanted."""
    sel = query.selector
    if (
        sel.having is not None
        or sel.order_by
        or sel.limit is not None
        or CURRENT not in ctx.wanted_kinds(query)
    ):
        return None
    parts = SelectParts(sel, scope, None, getattr(query.output, "target", "output"), ctx.env)
    if parts.aggs or parts.keys:
        return None
    return parts.compiled, parts.g
