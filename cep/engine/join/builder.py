"""Runtime entry point for join queries: `build_join_query(query, ctx)`.

Chain per stream side: junction -> [filters] -> side receiver -> JoinProcessor -> selector ->
[rate limiter] -> output. A table side is looked up, never subscribed. Equalities in `on`
between the two sides become hash keys of the windows (and the table's unique key)."""

from cep.engine.expressions import (
    FALLBACK_ERRORS,
    SingleStreamScope,
    compile_expression,
    compile_filter,
    make_function,
)
from cep.engine.join.processor import LEFT, RIGHT, JoinProcessor, TableSide
from cep.engine.join.scope import JoinScope
from cep.engine.join.sides import NamedWindowSide, StreamSide
from cep.engine.named_window import is_named_window
from cep.engine.pattern.builder import register_chain, with_tables
from cep.engine.processor import Processor, link
from cep.engine.join.lookup import table_lookup
from cep.engine.selector import compile_selector, has_aggregators
from cep.engine.table.keys import equi_split
from cep.engine.windows import WindowEnv, build_window
from cep.errors import InvalidQueryError, TypeMismatchError, UnknownStreamError
from cep.model import AttrType, Filter, StreamFunction, Window


class SideReceiver(Processor):
    """A junction subscriber feeding one side of a join (after the side's filters)."""

    def __init__(self, owner, which, keep=None):
        super().__init__()
        self.owner, self.which, self.keep = owner, which, keep

    def process(self, batch):
        if self.keep is not None:
            batch = self.keep(batch)
            if not batch:
                return
        self.owner.process_side(self.which, batch)

    def clone_with(self, owner):
        return SideReceiver(owner, self.which, self.keep)


class SelfJoinReceiver(Processor):
    """A self-join: each event goes to the left side, then to the right (each after its own
    filters), so it pairs with itself exactly once."""

    def __init__(self, owner, keeps):
        super().__init__()
        self.owner, self.keeps = owner, keeps

    def process(self, batch):
        for ev in batch:
            for which in (LEFT, RIGHT):
                keep = self.keeps[which]
                if keep is None or keep([ev]):
                    self.owner.process_side(which, [ev])

    def clone_with(self, owner):
        return SelfJoinReceiver(owner, self.keeps)


def build_join_query(query, ctx, name=None):
    name = name or ctx.element_name
    j = query.input
    if j.within_millis is not None:
        raise InvalidQueryError(
            "`within` on a join is not supported; bound the sides with time windows instead", j.span
        )
    infos = [_side_info(s, ctx) for s in (j.left, j.right)]
    if infos[0]["table"] is not None and infos[1]["table"] is not None:
        raise InvalidQueryError(
            "a join of two tables never produces events: at least one side must be a stream", j.span
        )
    hook = with_tables(ctx)
    sides_scope = [(i["definition"], i["refs"]) for i in infos]
    on_scope = hook(JoinScope(sides_scope, rows=("a", "b")))
    on = _on_function(j.on, on_scope)
    keys = _key_functions(j.on, on_scope, infos)
    self_join = _is_self_join(infos)
    sides = [_make_side(info, keys[which], ctx, self_join) for which, info in enumerate(infos)]
    triggers = _triggers(j, infos)
    outer = {
        "inner": [False, False],
        "left_outer": [True, False],
        "right_outer": [False, True],
        "full_outer": [True, True],
    }[j.join_type]
    aggregating = has_aggregators(query.selector)
    from cep.engine.events import EXPIRED

    want_expired = aggregating or EXPIRED in ctx.wanted_kinds(query)
    # the selector sees each probing row's join rows as one chunk (Siddhi's join processor
    # calls it per row): aggregates give a row per chunk, order by / limit apply per chunk
    chunked = aggregating or bool(query.selector.order_by) or query.selector.limit is not None
    lookups = [None, None]
    if not want_expired:
        for which in (LEFT, RIGHT):
            if (
                triggers[which]
                and infos[which]["window"] is None
                and infos[which].get("named") is None
            ):
                lookups[which] = table_lookup(
                    j.on,
                    on_scope,
                    infos,
                    which,
                    outer[which],
                    selected=_selected(query, ctx, infos),
                )
    proc = JoinProcessor(
        sides,
        on,
        [keys[RIGHT][1], keys[LEFT][1]],
        triggers,
        outer,
        chunked=chunked,
        want_expired=want_expired,
        lookups=lookups,
    )
    nullable = (outer[1], outer[0])
    sel_scope = hook(JoinScope(sides_scope, nullable=nullable))
    selector = ctx.build_selector(query, sel_scope, None, window=True, batch_window=chunked)
    out_def = selector.code.output_definition(getattr(query.output, "target", name))
    out = ctx.build_output(query, out_def, selector)
    link([proc, selector, out])
    register_chain(ctx, name, proc)
    _subscribe(proc, infos, ctx)
    return proc


def _selected(query, ctx, infos):
    """compile(for_clause, prologue) -> the query's stateless select over rows `a` and `b`
    with that comprehension head, or None (see cep.engine.join.lookup)."""
    sides_scope = [(i["definition"], i["refs"]) for i in infos]

    def compile_with(for_clause, prologue):
        scope = with_tables(ctx)(JoinScope(sides_scope, rows=("a", "b"), nullable=(False, False)))
        code = compile_selector(
            query.selector,
            scope,
            None,
            ctx.wanted_kinds(query),
            window=True,
            out_id=getattr(query.output, "target", "output"),
            env=ctx.env,
            for_clause=for_clause,
            prologue=prologue,
        )
        if code.order_by or code.limit is not None:
            return None
        return code.fn

    return compile_with


def _side_info(stream, ctx):
    sid = stream.stream_id
    table = ctx.tables.get(sid) if ctx.plan.table(sid) is not None else None
    if table is not None:
        if stream.handlers:
            raise InvalidQueryError(
                f"table '{sid}' in a join cannot have filters or windows", stream.span
            )
        return {
            "stream": stream,
            "table": table,
            "definition": table.definition,
            "refs": {sid, stream.alias},
        }
    j = ctx.junctions.get(sid)
    if j is None:
        raise UnknownStreamError(f"join side '{sid}' is not a defined stream or table", stream.span)
    d = j.definition
    scope = SingleStreamScope(d, [stream.alias])
    keeps, window = [], None
    for h in stream.handlers:
        if isinstance(h, Filter):
            if window is not None:
                raise InvalidQueryError("a join side's filters must come before its window", h.span)
            keeps.append(h.expression)
        elif isinstance(h, Window):
            window = h
        elif isinstance(h, StreamFunction):
            raise InvalidQueryError(
                f"stream function #{h.name} is not supported on a join side", h.span
            )
    keep = None
    if keeps:
        expr = keeps[0]
        for e in keeps[1:]:
            from cep.model import And

            expr = And(expr, e)
        keep = compile_filter(expr, with_tables(ctx)(scope), ctx.env)
    return {
        "stream": stream,
        "table": None,
        "definition": d,
        "refs": {sid, stream.alias},
        "keep": keep,
        "window": window,
        "scope": with_tables(ctx)(scope),
        "named": j if is_named_window(j) else None,
    }


def _is_self_join(infos):
    left, right = infos
    return (
        left["table"] is None
        and right["table"] is None
        and left["stream"].stream_id == right["stream"].stream_id
    )


def _make_side(info, key, ctx, self_join):
    """A table side, or a stream side with its window: any window Siddhi accepts (the
    single-stream processors). Its timers are owned by the stream (no batch splitting) when
    the window reads the stream directly, as a single-stream query's first window does."""
    if info["table"] is not None:
        if key[0] is _BACKEND_PROBE:
            return TableSide(info["table"], True, key[2])
        return TableSide(info["table"], key[0] is not None)
    w = info["window"]
    if info.get("named") is not None:
        return NamedWindowSide(info["named"], key[0])
    if w is None:
        return StreamSide(None, key[0])
    owner = (
        info["stream"].stream_id
        if (ctx.timer_owners and not self_join and info["keep"] is None)
        else None
    )
    window = build_window(
        w, info["scope"], WindowEnv(ctx.scheduler, ctx.playback, owner, ctx.siddhi_fixed)
    )
    return StreamSide(window, key[0])


def _triggers(j, infos):
    base = {None: [True, True], "left": [True, False], "right": [False, True]}[j.unidirectional]
    return [t and info["table"] is None for t, info in zip(base, infos)]


def _on_function(expr, scope):
    if expr is None:
        return None
    c = compile_expression(expr, scope)
    if c.type not in (AttrType.BOOL, AttrType.OBJECT):
        raise TypeMismatchError(
            f"a join condition must be a bool expression, not {c.type}", getattr(expr, "span", None)
        )
    src = (
        "def on(a, b):\n    try:\n"
        f"        return {c.fast}\n"
        "    except FALLBACK:\n"
        f"        return {c.source}\n"
    )
    return make_function("on", src, {**c.globals, "FALLBACK": FALLBACK_ERRORS})


def _key_functions(expr, scope, infos):
    """Per side: (key of a stored row, key of the other side's arriving row) or (None, None)."""
    keys = [(None, None), (None, None)]
    if expr is None:
        return keys
    for stored in (LEFT, RIGHT):
        pairs, _ = equi_split(expr, lambda v: scope.side_of(v), probe=1 - stored, stored=stored)
        table = infos[stored]["table"]
        if table is not None and not table.indexed and hasattr(table, "find"):
            keys[stored] = _backend_probe(expr, scope, table, stored)
            continue
        if table is not None:
            pairs = [(s, p) for s, p in pairs if table.indexed and s.name == table.key_name]
            pairs = pairs[:1]
        if not pairs:
            continue
        keys[stored] = (
            _key_fn([s for s, _ in pairs], scope, "a" if stored == LEFT else "b"),
            _key_fn([p for _, p in pairs], scope, "b" if stored == LEFT else "a"),
        )
    return keys


_BACKEND_PROBE = object()  # marks a table side that narrows with its backend's own probe


def _backend_probe(expr, scope, table, stored):
    """(marker, values(arriving row), probe) of a table backend's probe (a database table's
    pushed-down condition), or (None, None) when nothing narrows."""
    var = "b" if stored == LEFT else "a"
    probe = table.compile_probe(
        expr, lambda v: scope.side_of(v) == stored, lambda e: compile_expression(e, scope), (var,)
    )
    values = table.probe_values(probe)
    if values is None:
        return (None, None)
    return (_BACKEND_PROBE, values, probe)


def _key_fn(exprs, scope, var):
    cs = [compile_expression(e, scope) for e in exprs]
    src = cs[0].source if len(cs) == 1 else "(" + ", ".join(c.source for c in cs) + ",)"
    g = {}
    for c in cs:
        g.update(c.globals)
    return make_function("key", f"def key({var}):\n    return {src}\n", g)


def _subscribe(proc, infos, ctx):
    left, right = infos
    if _is_self_join(infos):
        ctx.junction_for(left["stream"].stream_id).subscribe(
            SelfJoinReceiver(proc, [left["keep"], right["keep"]])
        )
        return
    for which, info in enumerate(infos):
        if info["table"] is None:
            ctx.junction_for(info["stream"].stream_id).subscribe(
                SideReceiver(proc, which, info["keep"])
            )
