"""Generates the selector loop for queries with aggregates (see cep.engine.selector)."""
from collections import deque

from cep.engine.expressions import make_function


def _kind_condition(wanted):
    if wanted == {0}:
        return "k == 0"
    if wanted == {1}:
        return "k == 1"
    return None


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


def _tuple(srcs):
    return "(" + ", ".join(srcs) + ("," if len(srcs) == 1 else "") + ")"


def build_aggregating(compiled, hv, aggs, keys, wanted, batch_mode, g, removes=True):
    """-> (select(batch, state) -> out, init_state()). See the selector module docstring."""
    grouped = bool(keys)
    init_values = []
    for a in aggs:
        init_values.extend(a.spec.init(a.type, removes))
    nslots = len(init_values)
    S = (lambda i: f"st[{i}]") if grouped else (lambda i: f"s{i}")
    g = dict(g)
    init_fn = make_function("_init", f"def _init():\n    return {_init_source(init_values)}\n", g)
    g["_init"] = init_fn

    L = ["def select(batch, S):", "    out = []", "    _append = out.append"]
    locals_ = ", ".join(f"s{i}" for i in range(nslots))
    if grouped:
        L += ["    G = S", "    _get = G.get"]
    elif nslots:
        L.append(f"    {locals_}{',' if nslots == 1 else ''} = S")
    if batch_mode:
        L.append("    _last = None" if not grouped else "    _chosen = {}")
    L += ["    try:", "        for ts, r, k in batch:", "            if k == 2:"]
    reset = []
    for a in aggs:
        sl = (lambda a: (lambda i: S(a.slots[i])))(a)
        reset += a.spec.reset(sl)
    if grouped:
        L.append("                for st in G.values():")
        L += ["                    " + x for x in (reset or ["pass"])]
    else:
        L += ["                " + x for x in reset]
    L.append("                continue")
    if grouped:
        key = keys[0].source if len(keys) == 1 else _tuple([c.source for c in keys])
        L += [f"            _key = {key}", "            st = _get(_key)",
              "            if st is None:", "                st = G[_key] = _init()"]
    add, rem = [], []
    arg_names = {}  # one local per distinct argument source
    for n, a in enumerate(aggs):
        sl = (lambda a: (lambda i: S(a.slots[i])))(a)
        v = "_v"
        if a.arg is not None:
            v = arg_names.get(a.arg.source)
            if v is None:
                v = arg_names[a.arg.source] = f"_v{len(arg_names)}"
                L.append(f"            {v} = {a.arg.source}")
        add += a.spec.add(sl, v, removes)
        rem += a.spec.remove(sl, v)
    add, rem = _merge_guards(add), _merge_guards(rem)
    L.append("            if k == 0:")
    L += ["                " + x for x in (add or ["pass"])]
    L.append("            else:")
    L += ["                " + x for x in (rem or ["pass"])]
    cond = _kind_condition(wanted)
    ind = "            "
    if cond:
        L.append(f"{ind}if {cond}:")
        ind += "    "
    for n, a in enumerate(aggs):
        sl = (lambda a: (lambda i: S(a.slots[i])))(a)
        L.append(f"{ind}_a{n} = {a.spec.value(sl)}")
    L.append(f"{ind}o = {_tuple([c.source for c in compiled])}")
    if hv is not None:
        L.append(f"{ind}if {hv.source}:")
        ind += "    "
    if not batch_mode:
        L.append(f"{ind}_append((ts, o, k))")
    elif grouped:
        L.append(f"{ind}_chosen[_key] = (ts, o, k)")
    else:
        L.append(f"{ind}_last = (ts, o, k)")
    L.append("    finally:")
    if not grouped and nslots:
        L.append(f"        S[:] = [{locals_}]")
    else:
        L.append("        pass")
    if batch_mode:
        L.append("    return list(_chosen.values())" if grouped else
                 "    return [_last] if _last is not None else out")
    else:
        L.append("    return out")
    src = "\n".join(L) + "\n"
    fn = make_function("select", src, g)
    fn.source = src
    init_state = (lambda: {}) if grouped else init_fn
    return fn, init_state


def _merge_guards(lines):
    """Join consecutive one-line `if X: a` statements with the same guard into one."""
    out = []
    for line in lines:
        if (out and line.startswith("if ") and ": " in line and "\n" not in line
                and out[-1].startswith("if ") and not out[-1].endswith(":")):
            guard, body = line.split(": ", 1)
            pguard, pbody = out[-1].split(": ", 1)
            if guard == pguard:
                out[-1] = f"{pguard}: {pbody}; {body}"
                continue
        out.append(line)
    return out
