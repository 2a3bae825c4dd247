"""Generates the selector loop for queries with aggregates (see cep.engine.selector).

`AggCode` produces the pieces (state load/store, reset, the per-event body for a CURRENT or an
EXPIRED event, the batch-mode result) so that the plain selector and the window-fused selector
(cep.engine.fused) assemble the same statements."""

from collections import deque
from math import copysign

import re

from cep.engine.expressions import make_function
from cep.model import AttrType

FOREVER = ("minForever", "maxForever")  # their value outlives the window's events


def _init_source(values):
    parts = []
    for v in values:
        if isinstance(v, deque):
            parts.append("deque()")
        elif isinstance(v, dict):
            parts.append("{}")
        else:
            parts.append(repr(v))
    return "[" + ", ".join(parts) + "]"


def _is_initial(state, initial):
    """Whether a group's slots equal their initial values exactly (0.0, never -0.0)."""
    if state != initial:
        return False
    return not any(type(x) is float and copysign(1.0, x) < 0 for x in state)


def _tuple(srcs):
    return "(" + ", ".join(srcs) + ("," if len(srcs) == 1 else "") + ")"


def _indent(lines, n):
    return [" " * n + x for x in lines]


class AggCode:
    """Statement pieces of an aggregating selector."""

    def __init__(
        self, compiled, hv, aggs, keys, wanted, batch_mode, g, removes=True, drop_empty=False
    ):
        self.compiled, self.hv, self.aggs, self.keys = compiled, hv, aggs, keys
        self.wanted, self.batch_mode, self.removes = set(wanted), batch_mode, removes
        self.grouped = bool(keys)
        init_values = []
        for a in aggs:
            init_values.extend(a.spec.init(a.type, removes))
        self.population = self._population(drop_empty, init_values)
        self.nslots = len(init_values)
        self.g = dict(g)
        self.init_fn = make_function(
            "_init", f"def _init():\n    return {_init_source(init_values)}\n", self.g
        )
        self.g["_init"] = self.init_fn
        # one scalar slot per group (count, sum, ...): the dict holds the value itself
        self.scalar = (
            self.grouped and self.nslots == 1 and not isinstance(init_values[0], (deque, dict))
        )
        self.scalar_init = repr(init_values[0]) if self.scalar else None
        if self.scalar:
            self.S = lambda i: "st"
        else:
            self.S = (lambda i: f"st[{i}]") if self.grouped else (lambda i: f"s{i}")
        self._args()

    def _population(self, drop_empty, init_values):
        """The slot counting a group's events in the window when empty groups are dropped
        (a count() aggregator's, else a hidden one appended to `init_values`); None when
        groups are kept: no group by, no removals, or an aggregate that outlives the window
        (minForever/maxForever)."""
        if not (drop_empty and self.grouped and self.removes and not self.batch_mode) or any(
            a.spec.name in FOREVER for a in self.aggs
        ):
            return None
        for a in self.aggs:
            if a.spec.name == "count":
                return a.slots[0]
        init_values.append(0)
        return len(init_values) - 1

    def _slots(self, a):
        return lambda i: self.S(a.slots[i])

    def _share_sums(self):
        """sum(x) of a floating x reads avg(x)'s running sum instead of keeping its own."""
        avgs = {a.arg.source: a for a in self.aggs if a.spec.name == "avg" and a.arg is not None}
        shared = set()
        for a in self.aggs:
            other = avgs.get(a.arg.source) if a.arg is not None else None
            if (
                a.spec.name == "sum"
                and other is not None
                and a.type in (AttrType.DOUBLE, AttrType.FLOAT)
            ):
                a.slots = [other.slots[0]]
                shared.add(id(a))
        return shared

    def _args(self):
        self.arg_lines, self.add, self.rem = [], [], []
        names = {}
        shared = self._share_sums()
        for a in self.aggs:
            if id(a) in shared:
                continue
            v = "_v"
            if a.arg is not None:
                v = names.get(a.arg.source)
                if v is None:
                    v = names[a.arg.source] = f"_v{len(names)}"
                    self.arg_lines.append(f"{v} = {a.arg.source}")
            self.add += a.spec.add(self._slots(a), v, self.removes)
            self.rem += a.spec.remove(self._slots(a), v)
        n = self.population
        if n is not None and not any(a.spec.name == "count" for a in self.aggs):
            self.add.append(f"{self.S(n)} += 1")
            self.rem.append(f"{self.S(n)} -= 1")
        if n is not None and not self.scalar:
            # the window holds no event of the group: its state goes when it is back to the
            # initial one; a floating sum that kept a rounding residue (a + b - a - b) stays,
            # as Siddhi 3.2 keeps every group's aggregator, so the next average is its
            self.g["_INITIAL"] = self.init_fn()
            self.g["_initial"] = _is_initial
            self.rem.append(f"if not {self.S(n)} and _initial(st, _INITIAL): del G[_key]")
        self.add, self.rem = _merge_guards(self.add), _merge_guards(self.rem)

    def init_state(self):
        return {} if self.grouped else self.init_fn()

    # -- pieces --
    def prologue(self):
        L = ["out = []", "_append = out.append"]
        if self.grouped:
            L += ["G = S", "_get = G.get"]
        elif self.nslots:
            L.append(f"{self._locals()}{',' if self.nslots == 1 else ''} = S")
        if self.batch_mode:
            L.append("_chosen = {}" if self.grouped else "_last = None")
        return L

    def _locals(self):
        return ", ".join(f"s{i}" for i in range(self.nslots))

    def epilogue(self):
        if not self.grouped and self.nslots:
            return [f"S[:] = [{self._locals()}]"]
        return ["pass"]

    def result(self):
        if not self.batch_mode:
            return ["return out"]
        return [
            "return list(_chosen.values())"
            if self.grouped
            else "return [_last] if _last is not None else out"
        ]

    def reset(self):
        lines = []
        for a in self.aggs:
            lines += a.spec.reset(self._slots(a))
        if self.scalar:
            return ["for _k in list(G):", "    st = G[_k]"] + _indent(lines, 4) + ["    G[_k] = st"]
        if self.grouped:
            return ["for st in G.values():"] + _indent(lines or ["pass"], 4)
        return lines or ["pass"]

    def body(self, kind=None):
        """Statements for one event (`ts`, `r`, `k` bound); kind 0/1 when known statically."""
        L = []
        if self.grouped:
            ks = self.keys
            key = ks[0].source if len(ks) == 1 else _tuple([c.source for c in ks])
            if self.scalar:
                L += [f"_key = {key}", f"st = _get(_key, {self.scalar_init})"]
            else:
                L += [
                    f"_key = {key}",
                    "st = _get(_key)",
                    "if st is None:",
                    "    st = G[_key] = _init()",
                ]
        L += self.arg_lines
        if kind == 0:
            L += self.add
        elif kind == 1:
            L += self.rem
        else:
            L += ["if k == 0:"] + _indent(self.add or ["pass"], 4)
            L += ["else:"] + _indent(self.rem or ["pass"], 4)
        if self.scalar and self.population is not None and kind != 0:
            L += ["if st: G[_key] = st", "else: del G[_key]"]
        elif self.scalar:
            L.append("G[_key] = st")
        return L + self._output(kind)

    def _output(self, kind):
        # a stateful call (kf:kalmanFilter) sees every current and expired event, wanted or not,
        # as Siddhi's selector runs its attribute executors on both before dropping a kind
        stateful = any(getattr(v, "call_state", False) for v in self.g.values())
        if kind is not None and kind not in self.wanted:
            if not stateful:
                return []
            inner, srcs = self._inline_values()
            return inner + [f"o = {_tuple(srcs)}"]
        cond = (
            None
            if kind is not None
            else {frozenset({0}): "k == 0", frozenset({1}): "k == 1"}.get(frozenset(self.wanted))
        )
        values, srcs = self._inline_values()
        values.append(f"o = {_tuple(srcs)}")
        if cond and stateful:  # the row for every event, the output for the wanted kind
            out, inner = values + [f"if {cond}:"], []
        elif cond:
            out, inner = [f"if {cond}:"], values
        else:
            out, inner = [], values
        ind = 4 if cond else 0
        kk = "k" if kind is None else str(kind)
        if self.hv is not None:
            inner.append(f"if {self.hv.source}:")
            emit_ind = 4
        else:
            emit_ind = 0
        if not self.batch_mode:
            emit = f"_append((ts, o, {kk}))"
        elif self.grouped:
            emit = f"_chosen[_key] = (ts, o, {kk})"
        else:
            emit = f"_last = (ts, o, {kk})"
        inner.append(" " * emit_ind + emit)
        return out + _indent(inner, ind)

    def _inline_values(self):
        """(assignments, projection sources): an aggregate value used once is inlined."""
        srcs = [c.source for c in self.compiled]
        having = self.hv.source if self.hv is not None else ""
        lines = []
        for n, a in enumerate(self.aggs):
            value, name = a.spec.value(self._slots(a), a.type), f"_a{n}"
            pat = re.compile(rf"\b{name}\b")
            if len(pat.findall(" ".join(srcs))) == 1 and not pat.search(having):
                srcs = [pat.sub(lambda m: value, x) for x in srcs]
            else:
                lines.append(f"{name} = {value}")
        return lines, srcs


def build_aggregating(
    compiled, hv, aggs, keys, wanted, batch_mode, g, removes=True, resets=True, drop_empty=False
):
    """-> (select(batch, state) -> out, init_state()). See the selector module docstring;
    drop_empty: forget a group's state when the window holds none of its events."""
    c = AggCode(compiled, hv, aggs, keys, wanted, batch_mode, g, removes, drop_empty)
    L = ["def select(batch, S):"] + _indent(c.prologue(), 4) + ["    try:"]
    L.append("        for ts, r, k in batch:")
    if resets:
        L += ["            if k == 2:"] + _indent(c.reset(), 16) + ["                continue"]
    L += _indent(c.body(None if removes else 0), 12)
    L += ["    finally:"] + _indent(c.epilogue(), 8) + _indent(c.result(), 4)
    src = "\n".join(L) + "\n"
    fn = make_function("select", src, c.g)
    fn.source = src
    fn.aggcode = c  # the columnar kernel (cep.engine.columnar) reads its plan
    return fn, c.init_state


def _merge_guards(lines):
    """Join consecutive one-line `if X: a` statements with the same guard into one."""
    out = []
    for line in lines:
        if (
            out
            and line.startswith("if ")
            and ": " in line
            and "\n" not in line
            and out[-1].startswith("if ")
            and not out[-1].endswith(":")
        ):
            guard, body = line.split(": ", 1)
            pguard, pbody = out[-1].split(": ", 1)
            if guard == pguard:
                out[-1] = f"{pguard}: {pbody}; {body}"
                continue
        out.append(line)
    return out
