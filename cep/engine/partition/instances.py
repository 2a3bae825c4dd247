"""Per-key copies of a partition's queries, cloned from a prototype built once.

The prototype is built by the ordinary query builders against local junctions (one per stream
the partition's queries read, and one per inner `#stream`). An instance clones every processor
reachable from those junctions (`clone()`: compiled code shared, state empty) and re-links them;
outputs into inner streams are pointed at the instance's own inner junctions, outputs into outer
streams at the partition's buffered outputs."""
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


def make_instance(proto_junctions, buffers):
    """Clone the prototype: `proto_junctions` stream id -> junction with prototype heads;
    `buffers` id(outer InsertIntoStream) -> OutputBuffer."""
    by_proto = {id(j): sid for sid, j in proto_junctions.items()}
    junctions = {sid: StreamJunction(j.definition) for sid, j in proto_junctions.items()}
    memo = {}

    def copy(p):
        if p is None or not isinstance(p, Processor):
            return p
        q = memo.get(id(p))
        if q is not None:
            return q
        if hasattr(p, "clone_with"):
            q = p.clone_with(copy(p.owner))
            memo[id(p)] = q
            return q
        if isinstance(p, InsertIntoStream) and id(p.junction) in by_proto:
            q = InsertIntoStream(junctions[by_proto[id(p.junction)]], p.convert_kinds)
        elif id(p) in buffers:
            q = BufferedInsert(buffers[id(p)])
        else:
            q = p.clone()
        memo[id(p)] = q
        q.next = copy(p.next)
        return q

    for sid, j in proto_junctions.items():
        for s in j.subscribers:
            junctions[sid].subscribe(copy(s))
    stateful = [q for q in memo.values() if getattr(q, "stateful", False)]
    return Instance(junctions, stateful)
