"""A sample plug-in: one of each kind, plus a namespace it may not take."""

from collections import deque

from cep.model import AttrType
from cep.plugin import Aggregator, Extension, Param, StreamProcessor, Window, reject

EXTENSION = Extension("demo", "the plug-in API's test extension")
STEALS_STR = Extension("str", "takes a standard namespace: refused")


def _twice_rule(types, call):
    if types[0] not in (AttrType.INT, AttrType.LONG, AttrType.DOUBLE):
        reject(call, f"demo:twice() needs a number, not {types[0].value}", 0)
    return types[0]


@EXTENSION.function("twice", returns=_twice_rule, args=1)
def twice(x):
    """twice the value (null stays null)"""
    return None if x is None else x * 2


@EXTENSION.aggregator("range", returns="double")
class Range(Aggregator):
    """largest minus smallest value in the window"""

    def __init__(self):
        self.values = []

    def add(self, value):
        self.values.append(value)

    def remove(self, value):
        self.values.remove(value)

    def value(self):
        return float(max(self.values) - min(self.values)) if self.values else None


@EXTENSION.stream_processor("tag")
class Tag(StreamProcessor):
    """appends `label` (a string constant) and a running count"""

    @classmethod
    def signature(cls, args, types, call):
        if len(args) != 1 or types[0] is not AttrType.STRING:
            reject(call, "#demo:tag(label) takes one string constant")
        return [("label", AttrType.STRING), ("seen", AttrType.LONG)]

    @classmethod
    def parse(cls, p):
        return (p.str_const(0),)

    def setup(self, label):
        self.label, self.seen = label, 0

    def process(self, batch):
        out = []
        for ts, row, kind in batch:
            self.seen += 1
            out.append((ts, tuple(row) + (self.label, self.seen), kind))
        self.emit(out)


@EXTENSION.window("lastN", params=[Param("window.length", (AttrType.INT,))])
class LastN(Window):
    """a sliding window of the last n events"""

    @classmethod
    def parse(cls, p):
        return (p.int_const(0),)

    def setup(self, n):
        self.n, self.events = n, deque()

    def process(self, batch):
        from cep.engine.events import CURRENT, EXPIRED

        out = []
        for ts, row, kind in batch:
            if kind != CURRENT:
                continue
            self.events.append((ts, row))
            if len(self.events) > self.n:
                old_ts, old = self.events.popleft()
                out.append((ts, old, EXPIRED))
            out.append((ts, row, CURRENT))
        self.emit(out)
