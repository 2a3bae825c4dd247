"""Output delivery modes of sinks (issue 11) and the duplicate detector of at-least-once output.

`@sink(type=..., delivery='at-least-once'|'exactly-once'|'at-most-once', dedup='true'|'false')`;
the worker's `delivery.default` and `delivery.dedup` settings apply where a sink names none.

- **at-least-once** (default): every result reaches the sink; a result replayed after a
  restore is recognised by its identity (cep/protocol/frames.py), counted as a duplicate and,
  with `dedup` on (the default), dropped. With `dedup: false` it is written again (Flink's
  at-least-once), and still counted.
- **exactly-once** (file and Redis sinks only): output is staged and committed when the
  checkpoint that covers it completes (publishers/staged_file.py, staged_redis.py).
- **at-most-once**: written as it arrives, no duplicate state, nothing waits.
"""
from publishers.exceptions import SinkConfigError

AT_LEAST_ONCE, EXACTLY_ONCE, AT_MOST_ONCE = "at-least-once", "exactly-once", "at-most-once"
MODES = (AT_LEAST_ONCE, EXACTLY_ONCE, AT_MOST_ONCE)
TWO_PHASE_TYPES = ("file", "redis")  # sinks that can hold output until a checkpoint completes


def parse_mode(value, where):
    """A delivery mode from a setting or option value; SinkConfigError naming `where`."""
    mode = str(value).strip().lower().replace("_", "-")
    if mode not in MODES:
        raise SinkConfigError(f"{where}: delivery={value!r} is not one of {', '.join(MODES)}")
    return mode


def parse_flag(value, where, name):
    text = str(value).strip().lower()
    if text in ("true", "yes", "on", "1"):
        return True
    if text in ("false", "no", "off", "0"):
        return False
    raise SinkConfigError(f"{where}: {name}={value!r} is not true or false")


def sink_delivery(kind, options, default=AT_LEAST_ONCE, dedup=True, where=None):
    """(mode, dedup) of one sink; pops `delivery` and `dedup` from `options`. An explicit
    exactly-once on a sink that cannot stage output is an error; a worker default of
    exactly-once falls back to at-least-once on such sinks."""
    where = where or f"@sink(type='{kind}')"
    explicit = options.pop("delivery", None)
    flag = options.pop("dedup", None)
    mode = parse_mode(explicit if explicit not in (None, "") else default, where)
    if mode == EXACTLY_ONCE and kind not in TWO_PHASE_TYPES:
        if explicit not in (None, ""):
            raise SinkConfigError(exactly_once_refusal(kind, where))
        mode = AT_LEAST_ONCE
    return mode, dedup if flag in (None, "") else parse_flag(flag, where, "dedup")


def exactly_once_refusal(kind, where):
    return (f"{where}: delivery='exactly-once' needs a sink that can hold output until the "
            f"checkpoint covering it completes ({' or '.join(TWO_PHASE_TYPES)}); a {kind} sink "
            f"cannot, use 'at-least-once' (duplicates counted) or 'at-most-once'")



def seen_before(last, ident, n):
    """How many leading events of a batch of `n` with identity `ident` are at or below `last`,
    the highest (epoch, seq) already taken from its publisher (None: nothing yet)."""
    if last is None or ident.epoch > last[0]:
        return 0
    if ident.epoch < last[0]:
        return n
    return min(n, max(0, last[1] - ident.first_seq + 1))

class Dedup:
    """The highest identity seen per (publisher, stream): a batch's leading events at or
    below it are duplicates. In memory: a worker restart forgets it."""

    def __init__(self):
        self.marks = {}  # (publisher, stream) -> (epoch, last seq)

    def skip(self, stream, ident, n):
        """How many leading events of a batch of `n` with identity `ident` were seen before."""
        if not n:
            return 0
        key = (ident.publisher, stream)
        last = self.marks.get(key)
        end = (ident.epoch, ident.first_seq + n - 1)
        skip = seen_before(last, ident, n)
        if last is None or end > last:
            self.marks[key] = end
        return skip

    def restart(self, publisher, restored):
        """A publisher bolt started: with fresh state (`restored` None) its identities begin
        again, so forget its marks; after a restore the marks find the replayed results."""
        if restored is None:
            for key in [k for k in self.marks if k[0] == publisher]:
                del self.marks[key]
