"""The pattern query's processor: stream batches in, matches (composite rows) out.

`PatternProcessor.receiver(stream_id)` is what a stream junction feeds; every receiver pushes
into the one state machine, and matches go on to `self.next` (the selector) once per batch.
"""

from cep.engine.processor import Processor


class StreamReceiver(Processor):
    """Adapter: a junction subscriber that tags batches with their stream."""

    def __init__(self, owner, stream_id):
        super().__init__()
        self.owner = owner
        self.stream_id = stream_id

    def process(self, batch):
        self.owner.process_stream(self.stream_id, batch)

    def clone_with(self, owner):
        return StreamReceiver(owner, self.stream_id)


class PatternProcessor(Processor):
    stateful = True

    def __init__(self, shared):
        super().__init__()
        self.shared = shared
        self.machine = shared.machine()
        self.machine.on_output = self._timer_output

    def _timer_output(self, out):
        """Matches completed by a timer (an absence deadline passing)."""
        self.next.process(out)

    @property
    def streams(self):
        return self.shared.streams

    def receiver(self, stream_id):
        return StreamReceiver(self, stream_id)

    def process_stream(self, stream_id, batch):
        out = []
        self.machine.process(stream_id, batch, out)
        if out:
            self.next.process(out)

    def process(self, batch):
        raise TypeError("a pattern takes events through receiver(stream_id)")

    def get_state(self):
        return self.machine.get_state()

    def set_state(self, state):
        self.machine.set_state(state)

    def clone(self):
        return PatternProcessor(self.shared)
