"""Shared fixtures for receiver tests: a stream definition and a recording router."""

import pytest

from cep.model import Attribute, AttrType, StreamDefinition
from receivers.router import IngestRouter

KEY = ("1", "StockAnalysis", "StockStream")


@pytest.fixture
def stock_def():
    return StreamDefinition(
        "StockStream",
        (
            Attribute("symbol", AttrType.STRING),
            Attribute("price", AttrType.DOUBLE),
            Attribute("volume", AttrType.LONG),
            Attribute("qty", AttrType.INT),
            Attribute("ok", AttrType.BOOL),
        ),
    )


class Recorder:
    """A deliver() that keeps every batch; `refuse` events beyond `capacity`."""

    def __init__(self, capacity=None):
        self.events = []
        self.capacity = capacity

    def __call__(self, events, wait=0.0):
        room = len(events) if self.capacity is None else max(0, self.capacity - len(self.events))
        self.events.extend(events[:room])
        return len(events) - min(room, len(events))


@pytest.fixture
def recorder():
    return Recorder()


@pytest.fixture
def make_recorder():
    return Recorder


@pytest.fixture
def key():
    return KEY


@pytest.fixture
def router(stock_def, recorder):
    r = IngestRouter()
    r.register(KEY, stock_def, recorder)
    return r
