"""The query selector: projection, aggregation, group by, having, order by and limit, as one
generated function over a whole batch.

Three shapes of generated code:
- stateless (no aggregator): one list comprehension (fast version, safe fallback);
- running aggregates: one loop; CURRENT events add to the running state, EXPIRED events remove,
  RESET events (from batch windows) reset it; each event of a wanted kind gives an output row
  carrying the aggregate values after its update;
- batch mode (a batch window feeds aggregates, Siddhi's `processInBatch`): the same loop, but
  one row per window flush (no group by: the last row; group by: the last row of each group, in
  first-appearance order).
Events of kinds the output does not want update the aggregates and are then dropped, so rate
limiters only count what is output (Siddhi 3's currentOn/expiredOn)."""

import math
from dataclasses import dataclass

from cep.catalog import aggregators as agg
from cep.engine.aggregation_codegen import build_aggregating
from cep.engine.events import CURRENT, EXPIRED
from cep.engine.expressions import (
    FALLBACK_ERRORS,
    Scope,
    SourceRef,
    compile_expression,
    make_function,
)
from cep.engine.processor import Processor

# re-exported: callers import these from here too
from cep.engine.select_clause import has_aggregators, output_items, rewrite  # noqa: F401
from cep.errors import TypeMismatchError, UnknownAttributeError
from cep.model import AttrType, Attribute, FunctionCall, StreamDefinition


class OutputScope(Scope):
    """Names of the output row (`having`, `order by`), read from `o[i]`."""

    def __init__(self, names, types, out_id="output"):
        self.names, self.types, self.out_id = list(names), list(types), out_id

    def resolve(self, variable):
        if variable.name in self.names:
            i = self.names.index(variable.name)
            return f"o[{i}]", self.types[i]
        raise UnknownAttributeError(
            f"attribute '{variable.name}' does not exist in the output of the query "
            f"'{self.out_id}' (it has {', '.join(self.names)})",
            variable.span,
        )


@dataclass
class _Agg:
    spec: agg.AggSpec
    arg: object  # Compiled or None
    slots: list  # slot indexes
    type: AttrType


class SelectorCode:
    """What a query's selector compiles to; shared by clones."""

    def __init__(self, fn, init_state, names, types, batch_mode, order_by, limit):
        self.fn, self.init_state = fn, init_state
        self.names, self.types = names, types
        self.batch_mode, self.order_by, self.limit = batch_mode, order_by, limit

    def output_definition(self, stream_id):
        return StreamDefinition(
            stream_id, tuple(Attribute(n, t) for n, t in zip(self.names, self.types))
        )


class QuerySelector(Processor):
    stateful = True

    def __init__(self, code, per_flush=False):
        super().__init__()
        self.code = code
        self.state = code.init_state()
        self.per_flush = per_flush  # order by / limit apply to each incoming batch

    def process(self, batch):
        code = self.code
        if not code.order_by and code.limit is None:
            out = code.fn(batch, self.state)
        elif self.per_flush:  # a batch window's flush is one output chunk
            out = self._order_limit(code.fn(batch, self.state))
        else:  # Siddhi orders and limits the output of each arriving event
            out = []
            for chunk in _arrival_chunks(batch):
                out.extend(self._order_limit(code.fn(chunk, self.state)))
        if out:
            self.next.process(out)

    def _order_limit(self, out):
        for i, asc in reversed(self.code.order_by):
            out.sort(
                key=lambda e: (e[1][i] is not None, e[1][i]) if asc else (e[1][i] is None, e[1][i]),
                reverse=not asc,
            )
        return out if self.code.limit is None else out[: self.code.limit]

    def get_state(self):
        return self.state

    def set_state(self, state):
        self.state = state

    def clone(self):
        return QuerySelector(self.code, self.per_flush)


def _arrival_chunks(batch):
    """Split a batch after each CURRENT event: what one arrival produced (its expiries first)."""
    start = 0
    for i, e in enumerate(batch):
        if e[2] == CURRENT:
            yield batch[start : i + 1]
            start = i + 1
    if start < len(batch):
        yield batch[start:]


def calls_with_state(g):
    """Whether generated code with globals `g` calls a stateful function (cep.engine.call_state)."""
    return any(getattr(v, "call_state", False) for v in g.values())


def _kind_condition(wanted):
    if wanted == {CURRENT}:
        return "k == 0"
    if wanted == {EXPIRED}:
        return "k == 1"
    return "k != 2"


def compile_selector(
    selector,
    scope,
    input_definition,
    wanted,
    *,
    window=False,
    batch_window=False,
    pre_filter=None,
    out_id="output",
    env=None,
    fuse=None,
    drop_empty=False,
    for_clause=None,
    prologue=(),
):
    """Compile a model `Selector` into `SelectorCode`.

    wanted: the event kinds the output keeps; window: events may be EXPIRED/RESET;
    batch_window: a batch window feeds it; pre_filter: a filter Expression fused in (only
    used when there are no aggregates); fuse: a `cep.engine.fused.FuseSpec` to build the
    window-fused loop instead (only with aggregates); drop_empty: forget a group's aggregate
    state once the window holds none of its events (expired events are earlier arrivals);
    for_clause, prologue: the head of a stateless select's comprehension (instead of
    `for ts, r, k in batch`) and statements before it (a join's fused table lookup)."""
    p = _Parts(selector, scope, input_definition, out_id, env)
    order = _order_spec(selector, p.names)
    if not p.aggs:
        pf = compile_expression(pre_filter, scope) if pre_filter is not None else None
        if pf:
            p.g.update(pf.globals)
            p.g.update(env or {})
        fn = _stateless(
            p.compiled,
            p.hv,
            pf,
            wanted if (window or CURRENT not in wanted) else None,
            p.g,
            identity=for_clause is None
            and _is_identity(selector, p.items, input_definition, scope),
            head=for_clause or "for ts, r, k in batch",
            prologue=prologue,
        )
        return SelectorCode(fn, lambda: None, p.names, p.types, False, order, selector.limit)
    if fuse is not None:
        from cep.engine.aggregation_codegen import AggCode
        from cep.engine.fused import build_fused

        c = AggCode(
            p.compiled,
            p.hv,
            p.aggs,
            p.keys,
            wanted,
            False,
            p.g,
            removes=True,
            drop_empty=drop_empty,
        )
        fn, expire = build_fused(c, fuse)
        code = SelectorCode(fn, c.init_state, p.names, p.types, False, order, selector.limit)
        code.expire = expire
        code.aggcode = c  # the columnar kernel (cep.engine.columnar.sliding) reads its plan
        return code
    batch_mode = batch_window and bool(p.aggs)
    fn, init = build_aggregating(
        p.compiled,
        p.hv,
        p.aggs,
        p.keys,
        wanted,
        batch_mode,
        p.g,
        removes=window,
        resets=batch_window,
        drop_empty=drop_empty and not batch_window,
    )
    return SelectorCode(fn, init, p.names, p.types, batch_mode, order, selector.limit)


class _Parts:
    """The compiled pieces of a select clause: output expressions (aggregator calls replaced by
    value slots), having, group keys, and the globals of the generated code."""

    def __init__(self, selector, scope, input_definition, out_id, env):
        self.items = output_items(selector, scope, input_definition)
        self.aggs = []

        def extract(node):
            if isinstance(node, FunctionCall) and agg.lookup(node.name, node.namespace):
                return _make_agg(node, scope, self.aggs)
            return None

        exprs = [rewrite(e, extract) for _, e in self.items]
        having = rewrite(selector.having, extract) if selector.having is not None else None
        self.compiled = [compile_expression(e, scope) for e in exprs]
        self.names = [n for n, _ in self.items]
        self.types = [c.type for c in self.compiled]
        self.hv = None
        if having is not None:
            inputs = scope if getattr(scope, "state_event", False) else None
            self.hv = compile_expression(
                having, _HavingScope(OutputScope(self.names, self.types, out_id), inputs)
            )
            if self.hv.type not in (AttrType.BOOL, AttrType.OBJECT):
                raise TypeMismatchError(
                    f"having must be a bool expression, not {self.hv.type}",
                    getattr(selector.having, "span", None),
                )
        self.keys = [compile_expression(v, scope) for v in selector.group_by]
        self.g = {"FALLBACK": FALLBACK_ERRORS, "_sqrt": math.sqrt, **agg.AGG_GLOBALS}
        for c in (
            self.compiled
            + ([self.hv] if self.hv else [])
            + self.keys
            + [a.arg for a in self.aggs if a.arg]
        ):
            self.g.update(c.globals)
        self.g.update(env or {})


class _HavingScope(Scope):
    """What `having` reads: the output row; in a join or pattern (`inputs`, a scope whose
    `state_event` is set) a qualified name reads the input, and so does a bare name the output
    lacks, as Siddhi 3.2 resolves having over a state event."""

    def __init__(self, out, inputs=None):
        self.out, self.inputs = out, inputs
        if inputs is not None:
            self.tables = inputs.tables
            hook = getattr(inputs, "compile_is_null_stream", None)
            if hook is not None:
                self.compile_is_null_stream = hook

    def resolve(self, variable):
        if self.inputs is not None and (
            variable.stream is not None or variable.name not in self.out.names
        ):
            return self.inputs.resolve(variable)
        return self.out.resolve(variable)


def _make_agg(node, scope, aggs):
    typed = node.entry is not None and node.entry[0] == "aggregator"  # resolved by the compiler
    spec = (
        agg.lookup(node.entry[2], node.entry[1]) if typed else agg.lookup(node.name, node.namespace)
    )
    spec = agg.bind(spec, node)
    if spec.nargs == 0:
        arg, t = None, None
    else:
        if len(node.args) != max(spec.min_args, 1):
            raise TypeMismatchError(
                f"{node.name}() takes one argument, got {len(node.args)}", node.span
            )
        arg = compile_expression(node.args[0], scope)
        t = arg.type
    rt = node.rtype if typed else agg.result_type_of(node, t, spec)
    start = sum(len(a.slots) for a in aggs)
    n = len(spec.init(t or AttrType.LONG, True))
    aggs.append(_Agg(spec, arg, list(range(start, start + n)), t))
    return SourceRef(f"_a{len(aggs) - 1}", rt, nullable=True)


def _order_spec(selector, names):
    order = []
    for o in selector.order_by:
        name = getattr(o.variable, "name", None)
        if name not in names:
            raise UnknownAttributeError(
                f"order by '{name}': not an output attribute ({', '.join(names)})",
                getattr(o.variable, "span", None),
            )
        order.append((names.index(name), o.ascending))
    return order


def _is_identity(selector, items, definition, scope):
    if not (selector.select_all or not selector.attributes) or selector.having is not None:
        return False
    return getattr(scope, "select_all", None) is None and definition is not None


def _tuple(srcs):
    return "(" + ", ".join(srcs) + ("," if len(srcs) == 1 else "") + ")"


def _stateless(
    compiled, hv, pf, wanted, g, identity=False, head="for ts, r, k in batch", prologue=()
):
    conds = []
    # a stateful call (kf:kalmanFilter) sees every current and expired event, wanted or not,
    # as Siddhi's selector runs its attribute executors on both before dropping a kind
    late_kind = wanted is not None and calls_with_state(g) and not identity
    if wanted is not None and not late_kind:
        conds.append(_kind_condition(wanted))

    def comp(attr):
        cs = list(conds)
        if pf is not None:
            cs.append(getattr(pf, attr))
        if late_kind:
            cs.append("k != 2")
        cond = f" if {' and '.join(cs)}" if cs else ""
        if identity and hv is None:
            row = "r"
        else:
            row = _tuple([getattr(c, attr) for c in compiled])
        if late_kind:
            keep = _kind_condition(wanted)
            if hv is not None:
                keep += f" and {getattr(hv, attr)}"
            return f"[(ts, o, k) {head}{cond} for o in ({row},) if {keep}]"
        if hv is not None:
            return f"[(ts, o, k) {head}{cond} for o in ({row},) if {getattr(hv, attr)}]"
        return f"[(ts, {row}, k) {head}{cond}]"

    if identity and hv is None and not conds and pf is None:
        return lambda batch, state: batch
    src = (
        "def select(batch, S):\n" + "".join(f"    {x}\n" for x in prologue) + "    try:\n"
        f"        return {comp('fast')}\n"
        "    except FALLBACK:\n"
        f"        return {comp('source')}\n"
    )
    return make_function("select", src, g)
