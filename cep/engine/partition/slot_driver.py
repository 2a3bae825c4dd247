"""A generated loop over all keys of a batch for the slot form's commonest chains: filters,
then `length(n)` fused with its aggregating selector (cep/engine/fused.py) or windowless
running aggregates, then the output.

Instead of loading a key's state into the working processors and calling them (slots.py's
Lane), one generated function walks the batch's keys and, per key, reads its window ring and
running values straight from the slot storage into locals, runs the same per-event statements
as the fused selector (the aggregator code of cep/engine/aggregation_codegen.py: an arrival
first expires the oldest event when the window is full, then adds itself), and stores the
locals back. Applies only where no statement can raise part-way (outputs, aggregator arguments
and group keys are attributes or aggregates, no having), as the fused lean loop requires, so
state and outputs are the processors' exactly."""

from __future__ import annotations

from typing import Any, Callable, Optional

from cep.engine.aggregation_codegen import _indent
from cep.engine.events import EXPIRED
from cep.engine.expressions import make_function
from cep.engine.fused import FusedWindowSelector, _PLAIN
from cep.engine.partition.instances import BufferedInsert
from cep.engine.partition.slot_codecs import _ObjectCodec, _RingCodec, _ValuesCodec, failed
from cep.engine.query_builder import FilterProcessor
from cep.engine.selector import QuerySelector
from cep.engine.windows.base import NEVER
from cep.errors import EventFailure

__all__ = ["build_driver", "ENABLED"]

ENABLED = True  # tests switch it off to compare the generated loop with the processors


def _plain(c: Any) -> bool:
    sources = [x.source for x in c.compiled + c.keys] + [
        a.arg.source for a in c.aggs if a.arg is not None
    ]
    return c.hv is None and not c.batch_mode and all(_PLAIN.fullmatch(x) for x in sources)


def build_driver(head: Any, codecs: list, junction: Any) -> Optional[Callable[[list, Any], None]]:
    """drive(todo, clock) for a chain `FilterProcessor* -> FusedWindowSelector(length) ->
    BufferedInsert` or `FilterProcessor* -> QuerySelector (running aggregates, no window)
    -> BufferedInsert`, or None for any other chain."""
    if not ENABLED:
        return None
    chain, p = [], head
    while p is not None:
        chain.append(p)
        p = getattr(p, "next", None)
    filters = chain[:-2]
    if (
        len(chain) < 2
        or type(chain[-1]) is not BufferedInsert
        or not all(type(f) is FilterProcessor for f in filters)
    ):
        return None
    fs, sink = chain[-2], chain[-1]
    if type(fs) is FusedWindowSelector:
        c = getattr(fs.code, "aggcode", None)
        if fs.spec.kind != "length" or c is None:
            return None
        n = fs.spec.param
    elif type(fs) is QuerySelector:  # windowless running aggregates
        c = getattr(fs.code.fn, "aggcode", None)
        if c is None or c.removes or fs.code.order_by or fs.code.limit is not None:
            return None
        n = None
    else:
        return None
    if not _plain(c):
        return None
    ring = next((x for x in codecs if type(x) is _RingCodec and x.p is fs), None)
    vals = next((x for x in codecs if type(x) in (_ValuesCodec, _ObjectCodec) and x.p is fs), None)
    if (ring is None) != (n is None) or vals is None or (type(vals) is _ObjectCodec) != c.grouped:
        return None
    L = ["def drive(todo, clock):"]
    if n is not None:
        L += ["    R = _ring.events", "    F = _ring.state"]
    if c.grouped:
        L.append("    GL = _vals.objects")
    else:
        L += [f"    C{i} = _vals.columns[{i}]" for i in range(c.nslots)]
    L += ["    out = []", "    _append = out.append"]
    if n is not None and fs.spec.playback and EXPIRED in c.wanted:
        L += ["    now0 = clock.clock", "    if now0 is None:", "        now0 = NEVER"]
    L.append("    for slot, events in todo:")
    body = []
    if filters:  # as FilterProcessor: an empty result goes no further
        body += ["_given = events", "try:"]
        for i in range(len(filters)):
            body += [f"    events = _keep{i}(events)", "    if not events:", "        continue"]
        body += [
            "except EventFailure as exc:",
            "    _failed(_junction, _given, exc)",
            "    continue",
        ]
    if n is not None and EXPIRED in c.wanted:
        body.append("now = now0" if fs.spec.playback else "now = clock.now()")
    if n is not None:
        body += ["b = slot * %d" % n, "f = F[slot]"]
    if c.grouped:
        body += ["G = GL[slot]", "_get = G.get"]
    else:
        body += [f"s{i} = C{i}[slot]" for i in range(c.nslots)]
    tick = ["if ts > now:", "    now = ts"]
    if n is None:  # no window: every event adds
        body += ["for ts, r, k in events:"] + _indent(c.body(0), 4)
    elif EXPIRED not in c.wanted:  # the clock only stamps expired rows: not read at all
        expire = (
            [f"p = b + f - {n}", "r = R[p][1]"]
            + c.body(1)
            + ["R[p] = e", "f += 1", f"if f == {2 * n}:", f"    f = {n}"]
        )
        body += (
            ["for e in events:", f"    if f >= {n}:"]
            + _indent(expire, 8)
            + ["    else:", "        R[b + f] = e", "        f += 1", "    ts, r, k = e"]
            + _indent(c.body(0), 4)
        )
    else:
        expire = (
            ["if ts > now:", "    now = ts", "else:", "    ts = now"]
            if fs.spec.playback
            else ["ts = now"]
        )
        expire += (
            [f"p = b + f - {n}", "r = R[p][1]"]
            + c.body(1)
            + ["ts, r, k = e", "R[p] = e", "f += 1", f"if f == {2 * n}:", f"    f = {n}"]
        )
        fill = (tick if fs.spec.playback else []) + ["R[b + f] = e", "f += 1"]
        body += (
            ["for e in events:", "    ts, r, k = e", f"    if f >= {n}:"]
            + _indent(expire, 8)
            + ["    else:"]
            + _indent(fill, 8)
            + _indent(c.body(0), 4)
        )
    if n is not None:
        body.append("F[slot] = f")
    if not c.grouped:
        for i in range(c.nslots):
            body += [
                f"if type(C{i}) is _array and type(s{i}) is not float:",
                f"    _vals._put({i}, slot, s{i})",
                f"    C{i} = _vals.columns[{i}]",
                "else:",
                f"    C{i}[slot] = s{i}",
            ]
    L += _indent(body, 8)
    L += ["    if out:", "        _sink.process(out)"]
    from array import array

    g = dict(c.g)
    g.update(
        _ring=ring,
        _vals=vals,
        _sink=sink,
        _failed=failed,
        EventFailure=EventFailure,
        NEVER=NEVER,
        _array=array,
        _junction=junction,
    )
    for i, f in enumerate(filters):
        g[f"_keep{i}"] = f.keep
    src = "\n".join(L) + "\n"
    fn = make_function("drive", src, g)
    fn.source = src
    return fn
