"""The keyed form of a partition whose queries are windows and selectors without timers.

A partition of single-stream queries such as `from S[f]#window.length(5) select sym, avg(price)
insert into Out` normally clones the whole query chain for every key (instances.py): junction,
window, selector and output, about 2 KB per key before any event. Here the chain is built once,
as one working instance cloned from the same prototype, and every key keeps only its state, in
slot storage shared by all keys:

- `index`: key -> slot number (a dict, in key creation order);
- a length window's events in one flat list, `n` references per slot, and its fill per slot;
- a non-grouped aggregating selector's running values in one list per value (`sum`, `count`,
  ...); a grouped one's dict, and a batch window's lists, per slot.

For each key's sub-batch the key's state is loaded into the working processors, the sub-batch
goes through them (the same code as a cloned instance runs), and the state is stored back. The
outputs, their order within a batch, the float summation order and the snapshots are therefore
exactly the generic path's; `get_state`/`set_state` speak the generic path's per-key format.

It applies when every processor of the working instance is one this module knows how to store
(`Codec` below): filters, `length(n)` (fused with its aggregating selector or not),
`lengthBatch(n)`, selectors (stateless, running or windowed aggregates, with or without group
by), and outputs into outer streams. Anything with a timer (time windows), an inner stream, a
join, a pattern, a rate limiter or a table output keeps the cloned instances."""

from __future__ import annotations

from array import array
from typing import Any, Callable, Optional

from cep.engine.call_state import has_call_state
from cep.engine.fused import FusedWindowSelector
from cep.engine.partition.slot_codecs import (
    Codec,
    _BatchCodec,
    _ObjectCodec,
    _RingCodec,
    _ValuesCodec,
    failed,
)
from cep.engine.partition.slot_driver import build_driver
from cep.errors import EventFailure
from cep.engine.partition.instances import BufferedInsert, Recipe
from cep.engine.query_builder import FilterProcessor, LogProcessor
from cep.engine.selector import QuerySelector
from cep.engine.windows.batch import LengthBatchWindow
from cep.engine.windows.sliding import LengthWindow

__all__ = ["KeyedSlots", "build_keyed_slots"]

ENABLED = True  # tests switch it off to compare with the cloned instances

# processors that hold no state of their own: shared by every key as they are
_STATELESS = (FilterProcessor, LogProcessor, BufferedInsert)


def _selector_codecs(p: Any) -> Optional[list]:
    init = p.code.init_state
    first = init()
    if first is None:
        return []  # stateless: nothing per key
    if isinstance(first, list):
        return [_ValuesCodec(p, init)]
    if isinstance(first, dict):
        return [_ObjectCodec(p, "state", init)]
    return None


def _codecs_for(p: Any) -> Optional[list]:
    """The codecs of one stateful processor, or None when this form does not cover it."""
    t = type(p)
    if t is FusedWindowSelector:
        if p.spec.kind != "length" or p.code.expire is not None:
            return None
        sel = _selector_codecs(p)
        return None if sel is None else [_RingCodec(p, "window", p.spec.param)] + sel
    if t is QuerySelector:
        return _selector_codecs(p)
    if t is LengthWindow:
        return [_RingCodec(p, "q", p.n)]
    if t is LengthBatchWindow:
        return [_BatchCodec(p)]
    return None


def _chain(head: Any) -> list:
    out = []
    p = head
    while p is not None:
        out.append(p)
        p = getattr(p, "next", None)
    return out


def build_keyed_slots(recipe: Recipe, keyed_streams: set, purge: bool) -> Optional["KeyedSlots"]:
    """The slot form of a partition whose cloned instance `recipe` makes, or None when one
    of its processors is not covered (or it reads a stream the partition does not key)."""
    if not ENABLED:
        return None
    work = recipe.make()
    if not set(work.junctions) <= keyed_streams:
        return None  # unpartitioned or inner streams reach every instance: cloned chains
    codecs: list[Codec] = []
    stateful_ids = {id(p) for p in work.stateful}
    lanes: dict = {}
    seen: set = set()
    for sid, j in work.junctions.items():
        lanes[sid] = []
        for head in j.subscribers:
            lane_codecs = []
            for p in _chain(head):
                if id(p) in seen:
                    return None  # shared by two chains: not a plain chain
                seen.add(id(p))
                if has_call_state(p):
                    return None  # a stateful call (kf:kalmanFilter) keeps state per key
                if isinstance(p, _STATELESS):
                    continue
                cs = _codecs_for(p)
                if (
                    cs is None
                    or id(p) not in stateful_ids
                    or getattr(p, "_timer_due", None) is not None
                ):
                    return None
                lane_codecs.extend(cs)
            lane = Lane(head, lane_codecs, j)
            lane.driver = build_driver(head, lane_codecs, j)
            lanes[sid].append(lane)
            codecs.extend(lane_codecs)
    return KeyedSlots(work, codecs, lanes, purge)


class Lane:
    """One query chain of the working instance (a subscriber of its junction) with the
    codecs of its processors; `run` takes [(slot, events)] in the keys' order."""

    def __init__(self, head: Any, codecs: list[Codec], junction: Any) -> None:
        self.head, self.codecs, self.junction = head, codecs, junction
        # a generated loop over all keys (slot_driver.py), when it fits
        self.driver: Optional[Callable[[list, Any], None]] = None

    def run(self, todo: list, clock: Any) -> None:
        if self.driver is not None:
            self.driver(todo, clock)
            return
        head, codecs = self.head, self.codecs
        for slot, events in todo:
            for c in codecs:
                c.load(slot)
            try:
                head.process(events)
            except EventFailure as exc:  # as the junction does: that query drops them
                failed(self.junction, events, exc)
            finally:
                for c in codecs:
                    c.save(slot)


class KeyedSlots:
    """The working instance, the per-key slot storage and the key -> slot index."""

    def __init__(self, work: Any, codecs: list[Codec], lanes: dict, purge: bool) -> None:
        self.work = work
        self.codecs = codecs
        self.lanes = lanes  # stream id -> its Lanes, in subscription order
        self.index: dict = {}  # key -> slot, in creation order
        self.free: list[int] = []  # slots of purged keys, for reuse
        self.slots = 0
        self.track_seen = purge  # last event time per key, only for @purge
        self.created = 0

    def _slot(self, key: Any) -> int:
        if self.free:
            slot = self.free.pop()
            for c in self.codecs:
                c.reset(slot)
        else:
            slot = self.slots
            self.slots += 1
            for c in self.codecs:
                c.new()
        self.index[key] = slot
        self.created += 1
        return slot

    def routed(self, stream_id: str, groups: Any, seen: dict, clock: Any) -> None:
        """Each key's events through each query chain with the key's state loaded, keys in
        the order the router gives (first appearance). The cloned instances run every
        chain for one key, then the next key; the chains share no state and their outputs
        are buffered per chain, so chain by chain gives the same outputs."""
        index, new = self.index, self._slot
        todo = []
        for key, events in groups:
            slot = index.get(key)
            if slot is None:
                slot = new(key)
            todo.append((slot, events))
        if self.track_seen:
            for key, events in groups:
                seen[key] = events[-1][0]
        for lane in self.lanes[stream_id]:
            lane.run(todo, clock)

    def drop(self, key: Any) -> None:
        slot = self.index.pop(key, None)
        if slot is not None:
            for c in self.codecs:
                c.reset(slot)
            self.free.append(slot)

    # -- snapshots, in the cloned instances' format --
    def get_state(self) -> dict:
        """{key: [state of each stateful processor]}, as cloned instances give it."""
        stateful = self.work.stateful
        keys = {}
        for key, slot in self.index.items():
            for c in self.codecs:
                c.load(slot)
            keys[key] = [_export(p) for p in stateful]
        return keys

    def set_state(self, keys: dict) -> None:
        for c in self.codecs:
            _clear(c)
        self.index, self.free, self.slots = {}, [], 0
        for key, states in keys.items():
            slot = self._slot(key)
            for p, st in zip(self.work.stateful, states):
                p.set_state(st)
                if getattr(p, "_timer_due", None) is not None:
                    raise AssertionError("a restored window of the slot form has a timer")
            for c in self.codecs:
                c.save(slot)

    def key_count(self) -> int:
        return len(self.index)


def _export(p: Any) -> Any:
    """p.get_state(), copied where it would share the working objects."""
    st = p.get_state()
    if isinstance(p, (QuerySelector, FusedWindowSelector)):
        sel = st["sel"] if isinstance(p, FusedWindowSelector) else st
        if isinstance(sel, list):
            sel = list(sel)
        if isinstance(p, FusedWindowSelector):
            return {**st, "sel": sel}
        return sel
    if isinstance(p, LengthBatchWindow):
        return {**st, "s": {"cur": list(p.cur), "prev": list(p.prev)}}
    return st


def _clear(c: Codec) -> None:
    if isinstance(c, _RingCodec):
        c.events, c.state = [], []
    elif isinstance(c, _ValuesCodec):
        c.columns = [array("d") if type(v) is float else [] for v in c.init()]
    elif isinstance(c, _ObjectCodec):
        c.objects = []
    elif isinstance(c, _BatchCodec):
        c.cur, c.prev = [], []
