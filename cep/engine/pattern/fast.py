"""A pattern query outside a partition of the partition kernel's shape,

    from every e1=S[c1] -> e2=S[e2.k == e1.k and e2.v OP f(e1)] [within T] select ...

(an equality conjunct required) runs on that kernel (cep/engine/partition/kernel.py, with
the equality key in place of the partition key) instead of the general state machine, and columnar
batches on its columnar form (partition/vector.py) when it has one. Its output is the
general machine's: the kernel is the general machine's rule for this shape (tested against
it, tests/cep/engine/test_pattern_fast.py)."""

from cep.engine.junction import STEP
from cep.engine.processor import Processor


def build_fast(query, shared, defs, hook, scope, selector, out_def, ctx):
    """A KernelPattern for the query, or None when the kernel does not apply."""
    from cep.engine.partition.kernel import build_kernel
    from cep.engine.partition.keyed import _projection, _vector

    if getattr(ctx, "inner_junction", None) is not None:  # inside a partition's instance
        return None
    kernel = build_kernel(shared, defs, None, {}, hook, _projection(query, scope, ctx))
    if kernel is None or kernel.model["count_null"]:
        # without an equality key the general machine's unkeyed range index files and
        # drops partials by other rules than the partitioned (keyed) one the kernel follows
        return None
    if kernel.projects:
        sid = shared.nodes[0].stream_id
        kernel.vector = _vector(kernel, None, defs[sid], query, scope, out_def)
    return KernelPattern(kernel)


class KernelReceiver(Processor):
    """A junction subscriber that tags batches (rows or columns) with their stream."""

    def __init__(self, owner, stream_id):
        super().__init__()
        self.owner, self.stream_id = owner, stream_id

    def process(self, batch):
        self.owner.process_stream(self.stream_id, batch)

    def process_columns(self, cols):
        self.owner.process_columns(self.stream_id, cols)

    def columnar_targets(self):
        return self.owner.columnar_targets()


class KernelPattern(Processor):
    """The pattern's processor: the kernel's rows go to `self.next` (the selector), or past
    it to the output when the kernel projects the select clause itself."""

    stateful = True

    def __init__(self, kernel):
        super().__init__()
        self.kernel = kernel

    @property
    def streams(self):
        return self.kernel.streams

    def _sink(self):
        return self.next.next if self.kernel.projects else self.next

    def receiver(self, stream_id):
        return KernelReceiver(self, stream_id)

    def process_stream(self, stream_id, batch):
        out = []
        self.kernel.process(stream_id, batch, out)
        if out:
            self._sink().process(out)

    def process_columns(self, stream_id, cols):
        v = self.kernel.vector
        if v is None or not v.accepts(cols):
            rows = cols.events()
            for i in range(0, len(rows), STEP):  # send_batch's steps
                self.process_stream(stream_id, rows[i : i + STEP])
            return
        res = self.kernel.process_columns(stream_id, cols)
        if res is not None:
            from cep.engine.partition.keyed import emit_to

            emit_to(self._sink(), res)

    def columnar_targets(self):
        """The output junction when the columnar form feeds a stream (see
        junction._whole), else None."""
        if self.kernel.vector is None:
            return None
        sink = self._sink()
        j = getattr(sink, "junction", None)
        return [j] if j is not None and type(sink).__name__ == "InsertIntoStream" else None

    def process(self, batch):
        raise TypeError("a pattern takes events through receiver(stream_id)")

    def get_state(self):
        return self.kernel.get_state()

    def set_state(self, state):
        self.kernel.set_state(state)
