"""The processor contract: one `process(batch)` call per batch, output pushed to `self.next`."""


class Processor:
    """A link of a query chain. Subclasses override `process`; stateful ones also override
    `get_state`, `set_state` and `clone` (a fresh instance sharing compiled code, empty state)."""

    stateful = False

    def __init__(self):
        self.next = None

    def process(self, batch):
        """Handle a non-empty batch and push any output to `self.next.process(out)`."""
        raise NotImplementedError

    def emit(self, out):
        """Push `out` on when it is non-empty."""
        if out:
            self.next.process(out)

    def get_state(self):
        return None

    def set_state(self, state):
        pass

    def clone(self):
        """A fresh processor with the same configuration and empty state (not linked)."""
        raise NotImplementedError(f"{type(self).__name__} cannot be cloned")


class Sink(Processor):
    """The end of a chain that calls `fn(batch)`; used for outputs and tests."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def process(self, batch):
        self.fn(batch)

    def clone(self):
        return Sink(self.fn)


class Collector(Processor):
    """Keeps every event it receives in `self.events` (tests and tools)."""

    def __init__(self):
        super().__init__()
        self.events = []

    def process(self, batch):
        self.events.extend(batch)

    def clone(self):
        return Collector()


def link(processors):
    """Link a list of processors into a chain; returns the first."""
    for a, b in zip(processors, processors[1:]):
        a.next = b
    return processors[0]
