"""Range-sorted waiting partials: `e2.price > e1.price * 1.05` answered by bisection.

When an indexed pattern state's condition also has a conjunct `own_attr OP <expression over
earlier states>` (OP one of < <= > >=), the partials of each key are kept sorted by that
expression's value (the threshold). An event then finds the partials it can complete by
bisecting on its own value: a prefix (for > and >=) or a suffix (for < and <=) of the bucket,
instead of testing every waiting partial. Matches still complete in the order the partials
were filed (a sequence number), which is Siddhi's order.
"""

from bisect import bisect_left, bisect_right

from cep.engine.expressions import compile_expression, make_function
from cep.engine.events import CURRENT
from cep.model import CompareOp, Variable

_FLIP = {">": "<", ">=": "<=", "<": ">", "<=": ">="}


class Sorted:
    """One key's waiting partials, sorted by threshold: `thrs[i]` goes with `ents[i]`,
    an entry being (filing sequence number, partial)."""

    __slots__ = ("thrs", "ents")

    def __init__(self):
        self.thrs, self.ents = [], []

    def __len__(self):
        return len(self.ents)

    def __getstate__(self):
        return (self.thrs, self.ents)

    def __setstate__(self, state):
        self.thrs, self.ents = state


def find_range(conjuncts, own_refs, sides_of, scope):
    """(op, value(r), threshold(p), other conjuncts) for the first usable range conjunct."""
    for c in conjuncts:
        if not (isinstance(c, CompareOp) and c.op in _FLIP):
            continue
        for own, other, op in ((c.left, c.right, c.op), (c.right, c.left, _FLIP[c.op])):
            if not (isinstance(own, Variable) and own.stream in own_refs and own.index is None):
                continue
            if sides_of(other) != {"earlier"}:
                continue
            val = compile_expression(own, scope)
            thr = compile_expression(other, scope)
            rest = [x for x in conjuncts if x is not c]
            return (
                op,
                make_function("value", f"def value(r):\n    return {val.source}\n", val.globals),
                make_function(
                    "threshold", f"def threshold(p):\n    return {thr.source}\n", thr.globals
                ),
                rest,
            )
    return None


class RangedSteps:
    """StateMachine mixin for range-sorted states (node.range is set)."""

    def _file_ranged(self, j, node, p, key):
        thr = node.range[2](p)
        if thr is None or thr != thr:
            return False  # comparisons with null or NaN are false: it can never go on
        bucket = self.pending[j].get(key)
        if bucket is None:
            bucket = self.pending[j][key] = Sorted()
        at = bisect_right(bucket.thrs, thr)
        bucket.thrs.insert(at, thr)
        self.seq += 1
        bucket.ents.insert(at, (self.seq, p))
        return True

    def _unfile_ranged(self, node, bucket, p):
        """Remove p, found by bisecting on its threshold (then by identity among equals)."""
        thrs, ents = bucket.thrs, bucket.ents
        thr = node.range[2](p)
        if thr is None or thr != thr:
            return
        n = bisect_left(thrs, thr)
        while n < len(ents):
            if ents[n][1] is p:
                del ents[n]
                del thrs[n]
                return
            n += 1

    def step_ranged(self, i, ts, r):
        node = self.s.nodes[i]
        key = node.row_key(r)
        if key is None:
            return
        bucket = self.pending[i].get(key)
        if bucket is None:
            return
        op, value, _ = node.range
        v = value(r)
        if v is None or v != v:  # NaN satisfies no comparison (and would derail bisection)
            return
        lo, hi = _span(op, bucket.thrs, v)
        if lo >= hi:
            return
        cand = bucket.ents[lo:hi]
        hit = self._ranged_hits(node, cand, ts, r)
        if not hit:
            return
        hit.sort()
        slot = node.slot
        emit = not (node.next or node.every_to)
        for _, p in hit:
            p[slot] = r
            if emit:
                self.out.append((ts, self.s.make_row(p), CURRENT))
            else:
                p[-1] = ts
                self._complete(i, node, p, ts)
        self.emitted = self.emitted or emit
        self._drop_completed(i, key, bucket, lo, hi, slot)

    def _ranged_hits(self, node, cand, ts, r):
        if node.hits is not None:
            fits = node.hits([p for _, p in cand], r)
            ids = {id(p) for p in fits}
            cand = [e for e in cand if id(e[1]) in ids]
        within = node.within
        if within is not None:
            limit = ts - within
            cand = [e for e in cand if e[1][-1] >= limit]
        return cand

    def _drop_completed(self, i, key, bucket, lo, hi, slot):
        keep = [n for n in range(lo, hi) if bucket.ents[n][1][slot] is None]
        bucket.thrs[lo:hi] = [bucket.thrs[n] for n in keep]
        bucket.ents[lo:hi] = [bucket.ents[n] for n in keep]
        if not bucket.ents:
            del self.pending[i][key]


def _span(op, thrs, v):
    """Index range [lo, hi) of the thresholds an own value v satisfies."""
    if op == ">":  # v > thr
        return 0, bisect_left(thrs, v)
    if op == ">=":
        return 0, bisect_right(thrs, v)
    if op == "<":  # v < thr
        return bisect_right(thrs, v), len(thrs)
    return bisect_left(thrs, v), len(thrs)
