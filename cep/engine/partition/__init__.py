"""Partitions: `partition with (keys) begin queries end`, every query's state per key.

Runtime entry point: `build_partition(partition, ctx)` (see cep/engine/DESIGN.md). The queries
are built once as a prototype against local junctions; each key gets a clone the first time
one of its events arrives. A batch is grouped by key in one pass and each key gets its own
sub-batch (order within a key is kept; outputs of one batch leave together, grouped by key in
first-appearance order). Streams the partition reads but does not partition reach every
existing instance. `@purge(enable='true', interval='1 min', idle.period='1 hour')` drops keys
idle longer than the idle period, checked every interval (on event time in playback).

Partitions of window/aggregate chains without timers clone nothing per key: one working
instance runs every key with the key's state kept in shared slot storage (slots.py)."""

from cep.engine.context import BuildContext
from cep.engine.junction import StreamJunction
from cep.engine.output import InsertIntoStream
from cep.engine.partition.clock import PartitionScheduler
from cep.engine.partition.instances import OutputBuffer, Recipe
from cep.engine.partition.keyed import KeyedPatterns, qualifies
from cep.engine.partition.keys import compile_router_key, purge_settings
from cep.engine.partition.slots import build_keyed_slots
from cep.engine.processor import Processor
from cep.errors import InvalidQueryError, UnknownStreamError
from cep.model import JoinInputStream, Query, SingleInputStream, StateInputStream
from cep.model.definitions import StreamDefinition

__all__ = ["build_partition", "PartitionRuntime"]


def build_partition(partition, ctx):
    name = ctx.element_name
    rt = PartitionRuntime(partition, ctx, name)
    ctx.register(name, rt)
    return rt


class Router(Processor):
    """Subscribed to an outer stream's junction: hands its events to the partition."""

    def __init__(self, owner, stream_id, route):
        super().__init__()
        self.owner, self.stream_id, self.route = owner, stream_id, route

    def process(self, batch):
        self.owner.dispatch(self.stream_id, batch, self.route)

    def columnar_targets(self):
        """The junctions the partition's columnar kernels feed, when every query has one
        (a batch may then come whole, see junction._whole), else None."""
        fast = self.owner.fast
        return None if fast is None else fast.columnar_targets()

    def process_columns(self, cols):
        """A columnar batch: whole through the keyed kernels' columnar forms when they
        take it, else as rows in send_batch's steps."""
        fast = self.owner.fast
        if fast is not None and fast.process_columns(self.stream_id, cols):
            return
        from cep.engine.junction import STEP

        rows = cols.events()
        for i in range(0, len(rows), STEP):
            self.process(rows[i : i + STEP])


class PartitionRuntime:
    stateful = True

    def __init__(self, partition, ctx, name):
        self.partition, self.ctx, self.name = partition, ctx, name
        self.scheduler = ctx.scheduler
        self.clock = PartitionScheduler(ctx.scheduler)
        self.order = {}  # key -> creation order of its instance
        self._created = 0
        self.instances = {}
        self.last_seen = {}
        self.purge = purge_settings(partition)
        self._check_keys()
        self.fast = None
        self.slots = None  # the slot form (slots.py): one working chain, state per key
        if qualifies(partition):
            self.fast = KeyedPatterns(partition, ctx, name)
            self.local_ids = set(self.fast.streams)
            self.proto, self.buffers = {}, {}
        else:
            self.proto = self._build_prototype()
            self.buffers = self._collect_buffers()
            self.recipe = Recipe(self.proto, self.buffers)
        self._subscribe()
        if self.fast is None:
            self.slots = build_keyed_slots(self.recipe, self.keyed, self.purge is not None)
        if self.purge is not None:
            self._arm_purge(self.scheduler.now())

    # -- build ----------------------------------------------------------------------------
    def _input_streams(self):
        out = []
        for q in self.partition.queries:
            inp = q.input
            if isinstance(inp, SingleInputStream):
                streams = [inp]
            elif isinstance(inp, JoinInputStream):
                streams = [inp.left, inp.right]
            elif isinstance(inp, StateInputStream):
                from cep.engine.pattern.plan import flatten

                streams = [n.state.stream for n in flatten(inp.state)[0]]
            else:
                streams = []
            out.extend(
                s for s in streams if not s.inner and self.ctx.plan.table(s.stream_id) is None
            )
        return out

    def _check_keys(self):
        for key in self.partition.keys:
            if key.stream_id not in self.ctx.junctions:
                raise UnknownStreamError(
                    f"partition key stream '{key.stream_id}' is not defined", key.span
                )

    def _build_prototype(self):
        ctx = self.ctx
        local = {}
        for s in self._input_streams():
            j = ctx.junctions.get(s.stream_id)
            if j is None:
                raise UnknownStreamError(f"stream '{s.stream_id}' is not defined", s.span)
            local.setdefault(s.stream_id, StreamJunction(j.definition))
        junctions = dict(ctx.junctions)
        junctions.update(local)
        pctx = BuildContext(ctx.plan, junctions, ctx.tables, self.clock, ctx.playback, ctx.lock)
        pctx.env = ctx.env

        def inner_junction(target, out_def):
            j = local.get(target)
            if j is None:
                j = local[target] = junctions[target] = StreamJunction(
                    StreamDefinition(target, out_def.attributes)
                )
            return j

        pctx.inner_junction = inner_junction
        for i, q in enumerate(self.partition.queries):
            pctx.element_name = f"{self.name}/{q.name or f'query{i}'}"
            _build_query(q, pctx)
        self.local_ids = set(local)
        return local

    def _collect_buffers(self):
        buffers, seen = {}, set()

        def walk(p):
            while isinstance(p, Processor) and id(p) not in seen:
                seen.add(id(p))
                if hasattr(p, "owner"):
                    walk(p.owner)
                if isinstance(p, InsertIntoStream) and p.junction not in self.proto.values():
                    buffers[id(p)] = OutputBuffer(p)
                p = p.next

        for j in self.proto.values():
            for s in j.subscribers:
                walk(s)
        return buffers

    def _subscribe(self):
        keyed = {}
        for key in self.partition.keys:
            if key.stream_id in keyed:
                raise InvalidQueryError(f"stream '{key.stream_id}' is partitioned twice", key.span)
            keyed[key.stream_id] = compile_router_key(
                key, self.ctx.junctions[key.stream_id].definition
            )
        self.keyed = set(keyed)
        inputs = {s.stream_id for s in self._input_streams()}
        for sid in sorted(self.local_ids):
            if sid in self.ctx.junctions and sid in inputs:
                self.ctx.junctions[sid].subscribe(Router(self, sid, keyed.get(sid)))

    # -- events ---------------------------------------------------------------------------
    def dispatch(self, stream_id, batch, route):
        if self.fast is not None:
            if self.fast.merged is not None:
                self.fast.process_merged(stream_id, batch)
            else:
                self.fast.dispatch(stream_id, route(batch), self.last_seen)
            return
        for b in self.buffers.values():
            b.routing = True
        try:
            if self.slots is not None:
                self.slots.routed(stream_id, route(batch), self.last_seen, self.clock)
            elif route is None:
                for key, inst in list(self.instances.items()):
                    self.clock.current = self.order[key]
                    inst.junctions[stream_id].process(batch)
            else:
                self._routed(stream_id, batch, route)
        finally:
            for b in self.buffers.values():
                b.routing = False
                b.flush()

    def _routed(self, stream_id, batch, route):
        instances, seen, clock, order = self.instances, self.last_seen, self.clock, self.order
        for key, events in route(batch):
            inst = instances.get(key)
            if inst is None:
                inst = self._new_instance(key)
            seen[key] = events[-1][0]
            clock.current = order[key]
            inst.junctions[stream_id].process(events)

    def _new_instance(self, key):
        self._created += 1
        self.order[key] = self.clock.new_instance()
        inst = self.instances[key] = self.recipe.make()
        return inst

    # -- purging --------------------------------------------------------------------------
    def _arm_purge(self, now):
        self.scheduler.notify_at(now + self.purge[0], self._purge)

    def _purge(self, now):
        limit = now - self.purge[1]
        for key in [k for k, ts in self.last_seen.items() if ts < limit]:
            del self.last_seen[key]
            self.instances.pop(key, None)
            if self.slots is not None:
                self.slots.drop(key)
            if self.fast is not None:
                self.fast.drop(key)
            self.order.pop(key, None)
        self._arm_purge(now)

    # -- snapshot -------------------------------------------------------------------------
    def get_state(self):
        if self.fast is not None:
            return {"machines": self.fast.get_state(), "last_seen": dict(self.last_seen)}
        if self.slots is not None:  # the cloned instances' format (order: creation order)
            keys = self.slots.get_state()
            return {
                "keys": keys,
                "last_seen": dict(self.last_seen),
                "order": {k: i + 1 for i, k in enumerate(keys)},
                "created": self.slots.created,
            }
        return {
            "keys": {
                k: [p.get_state() for p in inst.stateful] for k, inst in self.instances.items()
            },
            "last_seen": dict(self.last_seen),
            "order": dict(self.order),
            "created": self._created,
        }

    def set_state(self, state):
        if self.fast is not None:
            self.fast.set_state(state["machines"])
            self.last_seen = dict(state["last_seen"])
            if self.purge is not None:
                self._arm_purge(self.scheduler.now())
            return
        if self.slots is not None:
            self.slots.set_state(state["keys"])
            self.slots.created = state["created"]
            self.last_seen = dict(state["last_seen"]) if self.purge is not None else {}
            if self.purge is not None:
                self._arm_purge(self.scheduler.now())
            return
        self.instances, self.order = {}, {}
        self.clock.clear()
        for key, states in state["keys"].items():
            inst = self._new_instance(key)
            self.order[key] = state["order"][key]
            self.clock.restored_instance(self.order[key])
            self.clock.current = self.order[key]
            for p, st in zip(inst.stateful, states):
                p.set_state(st)
        self._created = state["created"]
        self.last_seen = dict(state["last_seen"])
        if self.purge is not None:
            self._arm_purge(self.scheduler.now())


def _build_query(query, pctx):
    from cep.engine.query_builder import build_single_query

    inp = query.input
    if isinstance(inp, SingleInputStream):
        build_single_query(query, pctx, pctx.element_name)
    elif isinstance(inp, JoinInputStream):
        from cep.engine.join import build_join_query

        build_join_query(query, pctx)
    elif isinstance(inp, StateInputStream):
        from cep.engine.pattern import build_state_query

        build_state_query(query, pctx)
    elif not isinstance(query, Query):
        raise InvalidQueryError("a partition holds only queries", getattr(query, "span", None))
