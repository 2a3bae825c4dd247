"""A generated batch loop for the commonest partitioned pattern:

    partition with (k of S) begin
      from every e1=S[c1] -> e2=S[<e2 attrs vs e1 attrs>] [within T] select ... ; end;

Two plain stream states on the partitioned stream, the first under its own `every`. The whole
batch runs through one generated function: no call per event or per state, the partition key,
the equality index key, the range threshold (`e2.price > e1.price * 1.05`) and the remaining
condition inlined as source. Waiting partials sit per key, sorted by threshold when there is a
range conjunct (bisection finds the ones an event completes), in filing order otherwise;
matches leave in filing order, which is the general machine's (and Siddhi's) order.

Semantics are exactly those of the general state machine (cep/engine/pattern/nfa.py) for this
shape; tests/cep/engine/partition/test_kernel.py compares the two on random streams.
`build_kernel` returns None for any other shape (the general machine then runs)."""
import re
from bisect import bisect_left, bisect_right
from collections import deque

from cep.engine.expressions import compile_expression
from cep.engine.pattern.plan import STREAM
from cep.engine.pattern.scope import PatternScope
from cep.engine.table.keys import and_all, equi_split, sides_of
from cep.model import AttrType, CompareOp, Filter, Variable

ENABLED = True  # tests switch it off to compare with the general machine
_NUMERIC = {AttrType.INT, AttrType.LONG, AttrType.FLOAT, AttrType.DOUBLE}
_FLIP = {">": "<", ">=": "<=", "<": ">", "<=": ">="}
_SLOT0 = re.compile(r"(?<![\w\]\)])p\[0\]")
_ANY_P = re.compile(r"(?<![\w.])p\[")


def qualifies(shared):
    """True for the two-state shape the kernel runs (see the module docstring)."""
    nodes = shared.nodes
    if shared.sequence or len(nodes) != 2 or shared.starts != [0] or shared.scoped:
        return False
    if shared.absent_timed or shared.count_slots or shared.scopes:
        return False
    a, b = nodes
    if a.kind != STREAM or b.kind != STREAM or a.stream_id != b.stream_id:
        return False
    return (a.every_to == [0] and 0 in shared.fresh_every and a.next == [1]
            and not b.next and not b.every_to and b.scope is None and a.scope is None)


def build_kernel(shared, definitions, pkey_source, pkey_globals, hook, projection=None):
    """A PatternKernel for `shared` (a SharedMachine not yet merged with partition keys), or
    None when the shape or an expression does not suit the generated loop. `projection`:
    (compiled select expressions over the composite row, their globals), to emit output rows
    directly (the kernel's `projects` is then True), or None to emit composite rows."""
    if not ENABLED or not qualifies(shared):
        return None
    try:
        parts = _parts(shared, definitions, hook)
        row = "(s, r)"
        if projection is not None:
            row = _projected_row(projection, parts["globals"])
    except _Unsuited:
        return None
    if parts is None:
        return None
    kernel = PatternKernel(shared, _source(parts, pkey_source, shared.within, row),
                           {**pkey_globals, **parts["globals"]})
    kernel.projects = projection is not None
    return kernel


_COMPOSITE = re.compile(r"(?<![\w\]\)])r\[(\d+)\]")


def _projected_row(projection, globs):
    """The select clause's row as source over the start row `s` and the arriving row `r`."""
    compiled, extra = projection
    for name, value in extra.items():
        if globs.setdefault(name, value) is not value:
            raise _Unsuited(name)
    srcs = []
    for c in compiled:
        slots = set(_COMPOSITE.findall(c.source))
        if not slots <= {"0", "1"} or re.search(r"\br\[", _COMPOSITE.sub("", c.source)):
            raise _Unsuited(c.source)
        srcs.append(_COMPOSITE.sub(lambda m: "s" if m.group(1) == "0" else "r", c.source))
    return "(" + ", ".join(srcs) + ("," if len(srcs) == 1 else "") + ")"


class _Unsuited(Exception):
    pass


def _filter_expr(node):
    return and_all([h.expression for h in node.state.stream.handlers if isinstance(h, Filter)])


def _compile(expr, scope, globs, start):
    """Source of `expr`; `start`: it reads only slot 0, which becomes the arriving row r."""
    c = compile_expression(expr, scope)
    for name, value in c.globals.items():
        if globs.setdefault(name, value) is not value:
            raise _Unsuited(name)
    src = c.source
    src = _SLOT0.sub("r" if start else "s", src)
    if _ANY_P.search(src):
        raise _Unsuited(src)
    return f"({src})"


def _parts(shared, defs, hook):
    a, b = shared.nodes
    if any(not isinstance(h, Filter) for n in (a, b) for h in n.state.stream.handlers):
        return None
    globs = {}
    sa = hook(PatternScope(shared.nodes, defs, own=a))
    sb = hook(PatternScope(shared.nodes, defs, own=b))
    own_refs = {None, b.alias} if b.alias else {None, b.stream_id}

    def side(v):
        if v.stream in own_refs and v.index is None:
            return "own"
        return "earlier" if v.stream is not None else None
    expr_a, expr_b = _filter_expr(a), _filter_expr(b)
    pairs, rest = equi_split(expr_b, side, probe="earlier", stored="own")
    rng = _find_range(rest, side, sb)
    if rng is not None:
        rest = rng[3]
    out = {"globals": globs, "cond_a": None, "row_key": None, "start_key": None,
           "range": None, "rest": None}
    if expr_a is not None:
        out["cond_a"] = _compile(expr_a, sa, globs, start=True)
    if pairs:
        out["row_key"] = _tuple([_compile(own, sb, globs, False) for own, _ in pairs])
        out["start_key"] = _tuple([_compile(e, sb, globs, True) for _, e in pairs])
    if rng is not None:
        op, own, other = rng[:3]
        out["range"] = (op, _compile(own, sb, globs, False), _compile(other, sb, globs, True))
    if rest:
        out["rest"] = _compile(and_all(rest), sb, globs, False)
    return out


def _tuple(sources):
    return sources[0] if len(sources) == 1 else "(" + ", ".join(sources) + ",)"


def _find_range(conjuncts, side, scope):
    """(op, own expr, earlier expr, other conjuncts) for a numeric range conjunct, or None."""
    for c in conjuncts:
        if not (isinstance(c, CompareOp) and c.op in _FLIP):
            continue
        for own, other, op in ((c.left, c.right, c.op), (c.right, c.left, _FLIP[c.op])):
            if not (isinstance(own, Variable) and sides_of(own, side) == {"own"}):
                continue
            if sides_of(other, side) != {"earlier"}:
                continue
            if compile_expression(own, scope).type not in _NUMERIC or \
                    compile_expression(other, scope).type not in _NUMERIC:
                continue
            return op, own, other, [x for x in conjuncts if x is not c]
    return None


_SPAN = {">": ("0", "bisect_left(thrs, v)"), ">=": ("0", "bisect_right(thrs, v)"),
         "<": ("bisect_right(thrs, v)", "len(thrs)"), "<=": ("bisect_left(thrs, v)", "len(thrs)")}


def _key_lines(var, pk, own, indent, collapse):
    """Lines setting `var` to the combined (partition key, equality key), None to skip.
    `collapse`: both sides' equality keys are the partition key itself (or absent), so the
    partition key alone is the key."""
    pad = " " * indent
    if collapse:
        return [f"{pad}{var} = {pk}"]
    return [f"{pad}{var} = {own}", f"{pad}if {var} is not None:",
            f"{pad}    {var} = ({pk}, {var})"]


def _match_lines(parts, within, row):
    """The completing state's lines (inside `if b is not None:`, 16 spaces in). A waiting
    partial is an entry tuple (filing seq, start ts, start row, threshold, key); completing
    it takes it out of its bucket."""
    rest = parts["rest"]
    pick = (f"[e for e in cand for s in (e[2],) if {rest}]" if rest else "cand")
    live = "[e for e in hit if e[1] >= ts - WITHIN]" if within is not None else "hit"
    emit = ["for e in hit:", "    s = e[2]", f"    append((ts, {row}, 0))"]
    gone = []  # with `within`, completed partials are noted for _expire (see there)
    if within is not None:
        emit.append("    finished(e[0])")
        gone = ["finished(e[0])"]
    if parts["range"] is not None:
        op, value, _ = parts["range"]
        lo, hi = _SPAN[op]
        one = " and ".join(["e[1] >= ts - WITHIN" if within is not None else "True"] +
                           ([f"{rest}"] if rest else []))
        body = [f"v = {value}", "if v is not None:", "    thrs, ents = b",
                f"    lo = {lo}", f"    hi = {hi}", "    if hi - lo == 1:  # the usual case",
                "        e = ents[lo]", "        s = e[2]", f"        if {one}:",
                f"            append((ts, {row}, 0))"] + ["            " + x for x in gone] + [
                "            del thrs[lo]",
                "            del ents[lo]", "            if not ents:",
                "                del buckets[k]", "    elif lo < hi:",
                "        cand = ents[lo:hi]", f"        hit = {pick}", f"        hit = {live}",
                "        if hit:", "            if len(hit) > 1:", "                hit.sort()"]
        body += ["            " + x for x in emit]
        body += ["            if len(hit) == hi - lo:", "                del thrs[lo:hi]",
                 "                del ents[lo:hi]", "            else:",
                 "                done = set(map(id, hit))",
                 "                keep = [e for e in cand if id(e) not in done]",
                 "                thrs[lo:hi] = [e[3] for e in keep]",
                 "                ents[lo:hi] = keep", "            if not ents:",
                 "                del buckets[k]"]
    else:
        body = ["cand = b", f"hit = {pick}", f"hit = {live}", "if hit:"]
        body += ["    " + x for x in emit]
        body += ["    if len(hit) == len(b):", "        del buckets[k]", "    else:",
                 "        done = set(map(id, hit))",
                 "        b = buckets[k] = [e for e in b if id(e) not in done]"]
    out = []
    for line in body:  # `b` stays the key's bucket (None once dropped) for the start state
        out.append(" " * 16 + line)
        if line.endswith("del buckets[k]"):
            out.append(" " * 16 + line[:-len("del buckets[k]")] + "b = None")
    return out


def _start_lines(parts, pk, within):
    """The starting state's lines (8 spaces in)."""
    lines = []
    if parts["cond_a"] is not None:
        lines += [f"        if not {parts['cond_a']}:", "            continue"]
    if parts["start_key"] != parts["row_key"]:
        lines += _key_lines("k", pk, parts["start_key"], 8, parts["collapse"])
        lines += ["        if k is None:", "            continue", "        b = buckets.get(k)"]
    else:  # k and b are the event's key and bucket already
        lines += ["        if k is None:", "            continue"]
    if parts["range"] is not None:
        lines += [f"        thr = {parts['range'][2]}", "        if thr is None:",
                  "            continue"]
    else:
        lines += ["        thr = None"]
    lines += ["        seq += 1", "        e = (seq, ts, r, thr, k)"]
    if parts["range"] is not None:
        lines += ["        if b is None:", "            buckets[k] = ([thr], [e])", "        else:",
                  "            thrs, ents = b", "            at = bisect_right(thrs, thr)",
                  "            thrs.insert(at, thr)", "            ents.insert(at, e)"]
    else:
        lines += ["        if b is None:", "            buckets[k] = [e]", "        else:",
                  "            b.append(e)"]
    if within is not None:
        lines += ["        expire(e)"]
    return lines


def _source(parts, pk, within, row):
    pk = f"({pk})"
    lines = ["def run(batch, buckets, append, expire, seq, finished):",
             "    for ts, r, kind in batch:",
             "        if kind:", "            continue"]
    parts["collapse"] = parts["row_key"] in (None, pk) and parts["start_key"] in (None, pk)
    lines += _key_lines("k", pk, parts["row_key"], 8, parts["collapse"])
    lines += ["        if k is not None:", "            b = buckets.get(k)",
              "            if b is not None:"]
    lines += _match_lines(parts, within, row)
    lines += _start_lines(parts, pk, within)
    lines += ["    return seq"]
    return "\n".join(lines).replace("WITHIN", str(within)) + "\n"


class PatternKernel:
    """The per-plan state of one kernel pattern: waiting partials of every key."""

    def __init__(self, shared, source, globals_):
        self.shared, self.source = shared, source
        self.streams = shared.streams
        self.within = shared.within
        self.ranged = "thrs" in source
        ns = {**globals_, "bisect_left": bisect_left, "bisect_right": bisect_right}
        exec(compile(source, "<cep:pattern-kernel>", "exec"), ns)
        self._run = ns["run"]
        self.buckets, self.expiry, self.seq = {}, deque(), 0
        self.finished = set()  # seq of completed partials still in `expiry` (with within)
        self.on_output = None  # no timers: matches only complete on events

    def process(self, stream_id, batch, out):
        if stream_id not in self.streams or not batch:
            return
        self.seq = self._run(batch, self.buckets, out.append, self.expiry.append, self.seq,
                             self.finished.add)
        if self.within is not None and self.expiry:
            self._expire(batch[-1][0] - self.within)

    def _expire(self, limit):
        """Drop waiting partials that started before `limit` (filing order). Entries that
        completed are no longer in their bucket: those noted in `finished` are skipped at
        once, any other is searched for (after a restore `finished` starts empty)."""
        dq, buckets, finished = self.expiry, self.buckets, self.finished
        while dq and dq[0][1] < limit:
            e = dq.popleft()
            if e[0] in finished:
                finished.remove(e[0])
                continue
            b = buckets.get(e[4])
            if b is None:
                continue
            thr = e[3]
            if self.ranged:
                thrs, ents = b
                n = bisect_left(thrs, thr) if thr == thr else 0  # NaN: search them all
                while n < len(ents) and (thrs[n] == thr or thr != thr):
                    if ents[n] is e:
                        del ents[n]
                        del thrs[n]
                        break
                    n += 1
                left = ents
            else:
                for n, q in enumerate(b):
                    if q is e:
                        del b[n]
                        break
                left = b
            if not left:
                del buckets[e[4]]

    def pending_count(self):
        return sum(len(b[1]) if self.ranged else len(b) for b in self.buckets.values())

    def get_state(self):
        return {"kernel": self.buckets, "expiry": self.expiry, "seq": self.seq}

    def set_state(self, state):
        self.buckets, self.expiry, self.seq = state["kernel"], state["expiry"], state["seq"]
        self.finished = set()  # a hint only: the restored entries are searched for
