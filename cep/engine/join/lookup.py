"""Whole-batch lookups of a windowless stream side in an `@IndexBy` table, as one generated
comprehension (one dict lookup per event, the key equality not re-tested).

When the query's select is stateless (no aggregates, order by or limit), the lookup and the
select are one comprehension: `[(ts, (a.x, b.y), k) for ts, a, k in batch if (b :=
get(a.k)) is not None]`, with no intermediate joined rows; the join processor then hands its
output past the selector (`lookup.selected`)."""

from cep.engine.expressions import compile_expression, make_function
from cep.engine.join.processor import LEFT
from cep.engine.table.keys import and_all, conjuncts, equi_split


def table_lookup(expr, scope, infos, which, pad, selected=None):
    """A lookup of stream side `which` against the indexed table on the other side, or None.
    `selected(for_clause, prologue)` compiles the query's select with that comprehension head
    (or gives None); its function, when there is one, replaces the plain lookup."""
    other = 1 - which
    table = infos[other]["table"]
    if table is None or not table.indexed or expr is None:
        return None
    pairs, _ = equi_split(expr, lambda v: scope.side_of(v), probe=which, stored=other)
    pair = next(((s, p) for s, p in pairs if s.name == table.key_name), None)
    if pair is None:
        return None
    rest = [c for c in conjuncts(expr) if not _is_pair(c, pair)]
    key = _never_null(compile_expression(pair[1], scope))
    g = {**key.globals, "T": table, "_NO_KEY": _NO_KEY}
    arr, tab = ("a", "b") if which == LEFT else ("b", "a")
    cond = None
    if rest:
        c = compile_expression(and_all(rest), scope)
        cond, g = c.source, {**g, **c.globals}
    if pad:
        return _padded(key, arr, tab, cond, g)
    head = f"for ts, {arr}, k in batch if ({tab} := get({key.source})) is not None" + (
        f" and {cond}" if cond else ""
    )
    fn = selected(head, ("get = T.rows.get",)) if selected is not None else None
    if fn is not None:
        fn.__globals__.update(g)
        return _Selected(fn)
    src = f"def lookup(batch):\n    get = T.rows.get\n    return [(ts, (a, b), k) {head}]\n"
    return make_function("lookup", src, g)


class _Selected:
    """A lookup fused with the query's select: its rows are the query's output rows."""

    selected = True

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, batch):
        return self.fn(batch, None)


def _padded(key, arr, tab, cond, g):
    fits = f"{tab} is not None" + (f" and {cond}" if cond else "")
    body = (
        f"[(ts, (a, b), k) for ts, {arr}, k in batch for {tab} in "
        f"(_fit(get({key.source}), {arr}),)]"
    )
    src = (
        f"def lookup(batch):\n    get = T.rows.get\n"
        f"    def _fit({tab}, {arr}):\n"
        f"        return {tab} if {fits} else None\n"
        f"    return {body}\n"
    )
    return make_function("lookup", src, g)


_NO_KEY = object()  # a key no table row has


def _never_null(key):
    """A null probe key finds no row: `==` with a null operand is false (Siddhi 3.2), even
    against a row whose key is null."""
    if not key.nullable:
        return key
    if key.simple:
        key.source = f"(_NO_KEY if {key.source} is None else {key.source})"
    else:
        key.source = f"_no_null({key.source})"
        key.globals = {**key.globals, "_no_null": _no_null}
    return key


def _no_null(k):
    return _NO_KEY if k is None else k


def _is_pair(c, pair):
    from cep.model import CompareOp

    return (
        isinstance(c, CompareOp)
        and c.op == "=="
        and {id(c.left), id(c.right)} == {id(pair[0]), id(pair[1])}
    )
