"""Per-key copies of a partition's queries, cloned from a prototype built once.

The prototype is built by the ordinary query builders against local junctions (one per stream
the partition's queries read, and one per inner `#stream`). An instance clones every processor
reachable from those junctions (`clone()`: compiled code shared, state empty) and re-links them;
outputs into inner streams are pointed at the instance's own inner junctions, outputs into outer
streams at the partition's buffered outputs."""

from cep.engine.call_state import fresh_call_state, has_call_state
from cep.engine.junction import StreamJunction
from cep.engine.output import InsertIntoStream
from cep.engine.processor import Processor


class BufferedInsert(Processor):
    """Output into an outer stream from a partition instance: collected while the partition
    routes a batch (one downstream batch instead of one per key), passed straight on
    otherwise (timer-driven output)."""

    def __init__(self, sink):
        super().__init__()
        self.sink = sink

    def process(self, batch):
        self.sink.put(batch)

    def clone(self):
        return BufferedInsert(self.sink)


class OutputBuffer:
    def __init__(self, target):
        self.target = target  # the outer InsertIntoStream
        self.routing = False
        self.items = []

    def put(self, batch):
        if self.routing:
            self.items.extend(batch)
        else:
            self.target.process(batch)

    def flush(self):
        items, self.items = self.items, []
        if items:
            self.target.process(items)


class Instance:
    """One key's junctions and the stateful processors to snapshot, in a stable order."""

    __slots__ = ("junctions", "stateful")

    def __init__(self, junctions, stateful):
        self.junctions = junctions
        self.stateful = stateful


class Recipe:
    """How to clone the prototype, worked out once: every processor reachable from the local
    junctions gets an index; an instance is then a flat loop of clone calls and links."""

    def __init__(self, proto_junctions, buffers):
        self.sids = list(proto_junctions)
        self.definitions = [proto_junctions[sid].definition for sid in self.sids]
        local = {id(j): n for n, j in enumerate(proto_junctions.values())}
        self.index, self.steps, self.links, self.owners = {}, [], [], []
        for sid in self.sids:
            for head in proto_junctions[sid].subscribers:
                self._visit(head, local, buffers)
        self.heads = [
            [self.index[id(h)] for h in proto_junctions[sid].subscribers] for sid in self.sids
        ]
        self.stateful = [
            n
            for n, (kind, p, _) in enumerate(self.steps)
            if kind != "receiver" and getattr(p, "stateful", False)
        ]
        # clones whose code calls a stateful function (kf:kalmanFilter): own call sites
        self.fresh = [
            n for n, (kind, p, _) in enumerate(self.steps) if kind == "clone" and has_call_state(p)
        ]

    def _visit(self, p, local, buffers):
        if not isinstance(p, Processor) or id(p) in self.index:
            return
        n = self.index[id(p)] = len(self.steps)
        if hasattr(p, "clone_with"):
            self.steps.append(("receiver", p, None))
            self._visit(p.owner, local, buffers)
            self.owners.append((n, self.index[id(p.owner)]))
            return
        if isinstance(p, InsertIntoStream) and id(p.junction) in local:
            self.steps.append(("inner", p, local[id(p.junction)]))
        elif id(p) in buffers:
            self.steps.append(("buffer", p, buffers[id(p)]))
        else:
            self.steps.append(("clone", p, None))
        if isinstance(p.next, Processor):
            self._visit(p.next, local, buffers)
            self.links.append((n, self.index[id(p.next)]))

    def make(self):
        junctions = [StreamJunction(d) for d in self.definitions]
        objs = []
        for kind, p, arg in self.steps:
            if kind == "clone":
                objs.append(p.clone())
            elif kind == "buffer":
                objs.append(BufferedInsert(arg))
            elif kind == "inner":
                objs.append(InsertIntoStream(junctions[arg], p.convert_kinds))
            else:
                objs.append(None)  # receivers: once their owner exists
        for n in self.fresh:
            fresh_call_state(objs[n])
        for n, owner in self.owners:
            objs[n] = self.steps[n][1].clone_with(objs[owner])
        for a, b in self.links:
            objs[a].next = objs[b]
        for j, heads in zip(junctions, self.heads):
            j.subscribers = [objs[n] for n in heads]
        return Instance(dict(zip(self.sids, junctions)), [objs[n] for n in self.stateful])


def make_instance(proto_junctions, buffers):
    """Clone the prototype once (see Recipe; callers that clone often keep the Recipe)."""
    return Recipe(proto_junctions, buffers).make()
