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
shape; tests/cep/engine/test_partition_kernel*.py compare the two on random streams.

With `within`, a batch's end drops the partials filed before `last timestamp - within`, in
filing order up to the first younger one (the general machine's rule). The kernel does that
without touching the partials: `filed` holds the start timestamps of the partials filed since
the last one dropped, a C scan finds the cut, and `popped` (the highest dropped sequence
number) makes the match test reject dropped partials still sitting in a bucket. The buckets
are swept of them once as many have been dropped as were left after the previous sweep, so
memory stays bounded and the work per partial constant.
`build_kernel` returns None for any other shape (the general machine then runs)."""

import re
from bisect import bisect_left, bisect_right, insort
from itertools import compress, count, repeat
from operator import ge, itemgetter

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
    return (
        a.every_to == [0]
        and 0 in shared.fresh_every
        and a.next == [1]
        and not b.next
        and not b.every_to
        and b.scope is None
        and a.scope is None
    )


def build_kernel(shared, definitions, pkey_source, pkey_globals, hook, projection=None):
    """A PatternKernel for `shared` (a SharedMachine not yet merged with partition keys), or
    None when the shape or an expression does not suit the generated loop. `pkey_source`:
    the partition key's source over the row `r`, None for a pattern outside a partition. `projection`:
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
    kernel = PatternKernel(
        shared,
        _source(parts, pkey_source, shared.within, row),
        {**pkey_globals, **parts["globals"]},
    )
    kernel.projects = projection is not None
    # the model parts, for the columnar form (vector.py)
    kernel.model = {
        **parts["model"],
        "collapse": parts["collapse"],
        "count_null": parts["row_key"] is None,
    }
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
    out = {
        "globals": globs,
        "cond_a": None,
        "row_key": None,
        "start_key": None,
        "range": None,
        "rest": None,
    }
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
    out["model"] = {
        "nodes": (a, b),
        "cond_a": expr_a,
        "rest": rest,
        "pairs": pairs,
        "range": None if rng is None else rng[:3],
    }
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
            if (
                compile_expression(own, scope).type not in _NUMERIC
                or compile_expression(other, scope).type not in _NUMERIC
            ):
                continue
            return op, own, other, [x for x in conjuncts if x is not c]
    return None


# The candidates in a bucket sorted by threshold (then filing order), for the arriving value
# v: a prefix (`>`, `>=`) or a suffix (`<`, `<=`). Per op: whether the end entry is a
# candidate, whether its neighbour is not (so it is the only one), and (lo, hi) by bisection
# otherwise. NaN never sits in a bucket (its partial can never complete) nor arrives as v,
# so the bucket stays sorted and bisection sound.
_SPAN = {
    ">": ("b[0][0] < v", "b[1][0] >= v", "0", "bisect_left(b, v, key=THR)"),
    ">=": ("b[0][0] <= v", "b[1][0] > v", "0", "bisect_right(b, v, key=THR)"),
    "<": ("b[-1][0] > v", "b[-2][0] <= v", "bisect_right(b, v, key=THR)", "len(b)"),
    "<=": ("b[-1][0] >= v", "b[-2][0] < v", "bisect_left(b, v, key=THR)", "len(b)"),
}


def _key_lines(var, pk, own, indent, collapse):
    """Lines setting `var` to the combined (partition key, equality key), None to skip.
    `collapse`: both sides' equality keys are the partition key itself (or absent), so the
    partition key alone is the key."""
    pad = " " * indent
    if pk is None:  # no partition: the equality key alone (a constant without one)
        return [f"{pad}{var} = {own if own is not None else '0'}"]
    if collapse:
        return [f"{pad}{var} = {pk}"]
    return [f"{pad}{var} = {own}", f"{pad}if {var} is not None:", f"{pad}    {var} = ({pk}, {var})"]


def _match_lines(parts, within, row, indent):
    """The completing state's lines (inside `if b is not None:`). A waiting partial is an
    entry tuple (threshold, filing seq, start ts, start row), a bucket a list of them (sorted
    by threshold, then seq, when there is a range conjunct); completing one takes it out."""
    rest = parts["rest"]
    pick = f"[e for e in cand for s in (e[3],) if {rest}]" if rest else "cand"
    live = (
        "[e for e in hit if e[2] >= ts - WITHIN and e[1] > popped]" if within is not None else "hit"
    )
    emit = [
        "if len(hit) > 1:",
        "    hit.sort(key=SEQ)",
        "for e in hit:",
        "    s = e[3]",
        f"    append((ts, {row}, 0))",
    ]
    if parts["range"] is not None:
        body = _ranged_lines(parts, within, row, pick, live, emit)
    else:
        body = ["cand = b", f"hit = {pick}", f"hit = {live}", "if hit:"]
        body += ["    " + x for x in emit]
        body += [
            "    if len(hit) == len(b):",
            "        del buckets[k]",
            "    else:",
            "        done = set(map(id, hit))",
            "        b = buckets[k] = [e for e in b if id(e) not in done]",
        ]
    out = []
    for line in body:  # `b` stays the key's bucket (None once dropped) for the start state
        out.append(" " * indent + line)
        if line.endswith("del buckets[k]"):
            out.append(" " * indent + line[: -len("del buckets[k]")] + "b = None")
    return out


def _ranged_lines(parts, within, row, pick, live, emit):
    op, value, _ = parts["range"]
    end_in, alone, lo, hi = _SPAN[op]
    at = "0" if lo == "0" else "-1"
    rest = parts["rest"]
    one = " and ".join(
        ["e[2] >= ts - WITHIN and e[1] > popped" if within is not None else "True"]
        + ([f"{rest}"] if rest else [])
    )
    body = [
        f"v = {value}",
        "if v is not None and v == v:",
        f"    if {end_in}:",
        f"        if len(b) == 1 or {alone}:  # the usual case: one candidate",
        f"            e = b[{at}]",
        "            s = e[3]",
        f"            if {one}:",
        f"                append((ts, {row}, 0))",
        f"                del b[{at}]",
        "                if not b:",
        "                    del buckets[k]",
        "        else:",
        f"            lo = {lo}",
        f"            hi = {hi}",
        "            cand = b[lo:hi]",
        f"            hit = {pick}",
        f"            hit = {live}",
        "            if hit:",
    ]
    body += ["                " + x for x in emit]
    body += [
        "                if len(hit) == hi - lo:",
        "                    del b[lo:hi]",
        "                else:",
        "                    done = set(map(id, hit))",
        "                    b[lo:hi] = [e for e in cand if id(e) not in done]",
        "                if not b:",
        "                    del buckets[k]",
    ]
    return body


def _start_lines(parts, pk, within):
    """The starting state's lines (8 spaces in)."""
    lines = []
    if parts["cond_a"] is not None:
        lines += [f"        if not {parts['cond_a']}:", "            continue"]
    if parts["start_key"] != parts["row_key"]:
        lines += _key_lines("k", pk, parts["start_key"], 8, parts["collapse"])
        lines += ["        if k is None:", "            continue", "        b = buckets.get(k)"]
    if parts["range"] is not None:
        # a null or NaN threshold can never be met: no bucket; without an equality key the
        # general machine files it all the same, so it counts in the filing order that
        # `within` drops partials by (with one, its range index leaves it out altogether)
        lines += [f"        thr = {parts['range'][2]}", "        if thr is None or thr != thr:"]
        if within is not None and parts["row_key"] is None:
            lines += ["            seq += 1", "            filed(ts)"]
        lines += ["            continue"]
    else:
        lines += ["        thr = None"]
    lines += [
        "        seq += 1",
        "        e = (thr, seq, ts, r)",
        "        if b is None:",
        "            buckets[k] = [e]",
        "        else:",
    ]
    lines += [
        "            " + ("insort(b, e, key=THR)" if parts["range"] is not None else "b.append(e)")
    ]
    if within is not None:
        lines += ["        filed(ts)"]
    return lines


def _source(parts, pk, within, row):
    """The kernel's source; `pk`: the partition key's source, None outside a partition."""
    if pk is not None:
        pk = f"({pk})"
    lines = [
        "def run(batch, buckets, append, filed, seq, popped):",
        "    for ts, r, kind in batch:",
        "        if kind:",
        "            continue",
    ]
    if pk is None:  # one key for both states when they are the same expression
        parts["collapse"] = parts["row_key"] == parts["start_key"]
    else:
        parts["collapse"] = parts["row_key"] in (None, pk) and parts["start_key"] in (None, pk)
    lines += _key_lines("k", pk, parts["row_key"], 8, parts["collapse"])
    if parts["start_key"] == parts["row_key"]:  # one key for both states: skip at once
        lines += [
            "        if k is None:",
            "            continue",
            "        b = buckets.get(k)",
            "        if b is not None:",
        ]
        lines += _match_lines(parts, within, row, 12)
    else:
        lines += [
            "        if k is not None:",
            "            b = buckets.get(k)",
            "            if b is not None:",
        ]
        lines += _match_lines(parts, within, row, 16)
    lines += _start_lines(parts, pk, within)
    lines += ["    return seq"]
    return "\n".join(lines).replace("WITHIN", str(within)) + "\n"


class PatternKernel:
    """The per-plan state of one kernel pattern: waiting partials of every key."""

    def __init__(self, shared, source, globals_):
        self.shared, self.source = shared, source
        self.streams = shared.streams
        self.within = shared.within
        self.ranged = "insort(" in source
        ns = {
            **globals_,
            "bisect_left": bisect_left,
            "bisect_right": bisect_right,
            "insort": insort,
            "SEQ": itemgetter(1),
            "THR": itemgetter(0),
        }
        exec(compile(source, "<cep:pattern-kernel>", "exec"), ns)
        self._run = ns["run"]
        self.buckets, self.seq = {}, 0
        # with within: start timestamps of partials seq popped+1.. in filing order
        self.filed, self.popped, self.swept, self.sweep_every = [], 0, 0, SWEEP_MIN
        self.on_output = None  # no timers: matches only complete on events
        self.vector = None  # the columnar form (vector.py), when the query has one
        # in a partition: the plan's scheduler, whose clock restarts end the earlier runs
        self.scheduler, self.runs = None, 0

    def process(self, stream_id, batch, out):
        if stream_id not in self.streams or not batch:
            return
        if self.scheduler is not None and self.scheduler.restarts != self.runs:
            self._end_runs()
        self._rows_state()
        self.seq = self._run(
            batch, self.buckets, out.append, self.filed.append, self.seq, self.popped
        )
        if self.within is not None and self.filed:
            self._expire(batch[-1][0] - self.within)

    def process_columns(self, stream_id, cols):
        """A columnar batch the columnar form `accepts`: its output Columns, or None."""
        if stream_id not in self.streams or not len(cols):
            return None
        if self.scheduler is not None and self.scheduler.restarts != self.runs:
            self._end_runs()
        return self.vector.run(self, cols)

    def _end_runs(self):
        """The playback clock restarted (Scheduler.restore_clock): the keys fed so far have
        ended their runs and get no more events, so their partials, which could never
        complete, all leave. Else the first still within `within` of the end stops every
        later cut in filing order (the new run's timestamps start again) and every later
        key's partials stay. Output is unchanged; a live clock never comes here."""
        self.runs = self.scheduler.restarts
        if self.vector is not None:
            self.vector.pend = self.vector.filed = None
        self.buckets, self.filed = {}, []
        self.popped = self.swept = self.seq
        self.sweep_every = SWEEP_MIN

    def _rows_state(self):
        if self.vector is not None and self.vector.pend is not None:
            self.vector.to_rows(self)

    def _expire(self, limit):
        """Drop the partials filed before the first one that started at or after `limit`."""
        filed = self.filed
        n = next(compress(count(), map(ge, filed, repeat(limit))), len(filed))
        if n:
            del filed[:n]
            self.popped += n
            if self.popped - self.swept >= self.sweep_every:
                self._sweep()

    def _sweep(self):
        """Take the dropped partials (seq <= popped) out of their buckets."""
        cut, left = self.popped, 0
        buckets = self.buckets
        for k, b in list(buckets.items()):
            keep = [e for e in b if e[1] > cut]
            if not keep:
                del buckets[k]
            elif len(keep) != len(b):
                buckets[k] = keep
            left += len(keep)
        self.swept, self.sweep_every = cut, max(SWEEP_MIN, left)

    def pending_count(self):
        self._rows_state()
        self._sweep()
        return sum(map(len, self.buckets.values()))

    def get_state(self):
        self._rows_state()
        self._sweep()  # the buckets then hold exactly the live partials
        return {
            "kernel": self.buckets,
            "filed": list(self.filed),
            "popped": self.popped,
            "seq": self.seq,
        }

    def set_state(self, state):
        if self.vector is not None:
            self.vector.pend = self.vector.filed = None
        self.buckets, self.seq = state["kernel"], state["seq"]
        if "expiry" in state:  # a snapshot of the earlier form (see _old_state)
            self.buckets, self.filed, self.popped = _old_state(state, self.ranged)
        else:
            self.filed, self.popped = list(state["filed"]), state["popped"]
        self.swept, self.sweep_every = self.popped, SWEEP_MIN
        if self.scheduler is not None:
            self.runs = self.scheduler.restarts
        self._sweep()


# dropped partials are swept out of the buckets once this many (or as many as were left
# after the last sweep, if more) have been dropped
SWEEP_MIN = 2048


def _old_state(state, ranged):
    """(buckets, filed, popped) of a snapshot taken before 2026-11-25: entries (seq, ts, row,
    thr, key), a ranged bucket ([thr], [entry]), a queue of every partial filed since the
    last one dropped."""
    buckets = {
        k: [(e[3], e[0], e[1], e[2]) for e in (b[1] if ranged else b)]
        for k, b in state["kernel"].items()
    }
    dq = state["expiry"]
    return buckets, [e[1] for e in dq], dq[0][0] - 1 if dq else state["seq"]
