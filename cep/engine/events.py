"""Event kinds. An event is a plain tuple `(timestamp, row, kind)`; a batch is a list of them."""

CURRENT = 0
EXPIRED = 1
RESET = 2

KIND_NAMES = {CURRENT: "current", EXPIRED: "expired", RESET: "reset"}

# which kinds an output event type (`insert current|expired|all events`) lets through
WANTED_KINDS = {
    "current": frozenset({CURRENT}),
    "expired": frozenset({EXPIRED}),
    "all": frozenset({CURRENT, EXPIRED}),
}


def as_current(batch):
    """The batch with every event turned into a CURRENT event (what inserting into a stream does)."""
    return [(t, r, CURRENT) for t, r, _ in batch]


def as_pairs(batch):
    """`(timestamp, row)` pairs, the shape user callbacks receive."""
    return [(t, r) for t, r, _ in batch]
