"""Output delivery modes of sinks and the duplicate detector of at-least-once output.

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

import logging

from publishers.exceptions import SinkConfigError

log = logging.getLogger(__name__)

AT_LEAST_ONCE, EXACTLY_ONCE, AT_MOST_ONCE = "at-least-once", "exactly-once", "at-most-once"
MODES = (AT_LEAST_ONCE, EXACTLY_ONCE, AT_MOST_ONCE)
# sinks that can hold output until a checkpoint completes (file, redis), or whose broker
# drops a replayed result by its identity (nats: JetStream message ids)
TWO_PHASE_TYPES = ("file", "redis", "nats")


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
    return (
        f"{where}: delivery='exactly-once' needs a sink that can hold output until the "
        f"checkpoint covering it completes ({' or '.join(TWO_PHASE_TYPES)}); a {kind} sink "
        f"cannot, use 'at-least-once' (duplicates counted) or 'at-most-once'"
    )


def seen_before(last, ident, n):
    """How many leading events of a batch of `n` with identity `ident` are at or below `last`,
    the highest (epoch, seq) already taken from its publisher (None: nothing yet). Only for
    version 3 frames (no lineage): their numbers hold while replays keep the original order."""
    if last is None or ident.epoch > last[0]:
        return 0
    if ident.epoch < last[0]:
        return n
    return min(n, max(0, last[1] - ident.first_seq + 1))


class LaneMarks:
    """What was taken per lane (topology/lineage.py): the highest sequence number and the
    holes below it. A lane is FIFO and a replay numbers its results as the first time, so a
    number at or below the mark is a result taken before (a duplicate) unless it lies in a
    hole. A hole is a gap in the numbers: results that never reached this worker (lost in
    transit, or sent to another worker); it is logged at ERROR, and results that later fill
    it are taken, never dropped."""

    MAX_HOLES = 64  # per lane; the oldest is forgotten beyond it

    def __init__(self, label="", report=True):
        self.label, self.report = label, report  # report: log gaps (one owner per worker)
        self.last = {}  # mark key -> highest number taken
        self.holes = {}  # mark key -> [[first, end)] not taken below the mark
        self.gaps = self.filled = 0

    def take(self, key, first, n):
        """(fresh index ranges [(i, j)] of a run of `n` numbered from `first`, duplicates)."""
        end = first + n
        last = self.last.get(key)
        if last is None or first > last:
            if last is not None and first > last + 1:
                self._hole(key, last + 1, first)
            self.last[key] = end - 1
            return [(0, n)], 0
        fresh = []
        holes = self.holes.get(key)
        if holes:
            for a, b in holes:
                lo, hi = max(a, first), min(b, end, last + 1)
                if lo < hi:
                    fresh.append((lo - first, hi - first))
            if fresh:
                self._fill(key, first, min(end, last + 1))
        if end - 1 > last:
            fresh.append((last + 1 - first, n))
            self.last[key] = end - 1
        taken = sum(j - i for i, j in fresh)
        return fresh, n - taken

    def _hole(self, key, a, b):
        holes = self.holes.setdefault(key, [])
        holes.append([a, b])
        if len(holes) > self.MAX_HOLES:
            del holes[0]
        self.gaps += b - a
        if self.report:
            log.error(
                "%s: results %d..%d of lane %s never reached this worker: lost on the way, "
                "or delivered to another worker (taken if they still come)",
                self.label,
                a,
                b - 1,
                _lane_name(key),
            )

    def _fill(self, key, a, b):
        kept = []
        for lo, hi in self.holes[key]:
            if hi <= a or lo >= b:
                kept.append([lo, hi])
                continue
            self.filled += min(hi, b) - max(lo, a)
            if lo < a:
                kept.append([lo, a])
            if hi > b:
                kept.append([b, hi])
        if kept:
            self.holes[key] = kept
        else:
            del self.holes[key]

    def forget(self, match):
        """Forget the marks whose key `match(key)` is true."""
        for key in [k for k in self.last if match(k)]:
            del self.last[key]
            self.holes.pop(key, None)


def _lane_name(key):
    return key[-1] if isinstance(key, tuple) else key


def fresh_events(marks, base, ident, events):
    """(events not taken before, duplicates) of a version 5 batch, checked run by run against
    `marks` (LaneMarks) under the keys `base + (lane,)`."""
    out, dups, at = [], 0, 0
    for lane, first, n in ident.runs:
        ranges, dup = marks.take(base + (lane,), first, n)
        dups += dup
        for i, j in ranges:
            out.extend(events[at + i : at + j])
        at += n
    return (events, 0) if not dups else (out, dups)


class Dedup:
    """Duplicate detection of at-least-once output, per stream. Version 5 frames are checked
    per lane (LaneMarks); version 3 frames by the highest (epoch, seq) per (publisher,
    stream): a batch's leading events at or below it are duplicates.

    The marks live in memory; with a `store` (publishers/marks_log.py MarksLog, the worker's
    `delivery.marks` setting) they are also kept on disk in the worker's state dir, so a
    worker process that is killed and started again still drops what it wrote before: each
    frame that takes a result is recorded before the sinks get it (`fresh`) and confirmed
    after (`taken`), and the publisher service acknowledges a frame once its confirmation is
    durable. Without a store a worker restart forgets the marks, and a replay after it writes
    again what the worker wrote before."""

    def __init__(self, label=""):
        self.marks = {}  # (publisher, stream) -> (epoch, last seq): version 3 frames
        self.lanes = LaneMarks(label)  # (publisher, stream, lane) -> marks: version 5
        self.store = None  # MarksLog: the marks on disk (set by MarksLog.open)

    def fresh(self, stream, ident, events):
        """(events not seen before, how many were) of a batch with identity `ident`; with a
        store, a batch that takes anything is recorded before it goes to the sinks."""
        if not events:
            return events, 0
        if ident.runs is not None:
            out, dups = fresh_events(self.lanes, (ident.publisher, stream), ident, events)
            if self.store is not None and dups < len(events):
                self.store.frame_v5(ident.publisher, stream, ident.runs, len(events) - dups)
            return out, dups
        n = len(events)
        skip = self.skip(stream, ident, n)
        if self.store is not None and skip < n:
            self.store.frame_v3(ident.publisher, stream, ident.epoch, ident.first_seq, n, n - skip)
        return (events[skip:] if skip else events), skip

    def taken(self):
        """The sinks took the batch `fresh` passed last: its marks are confirmed."""
        if self.store is not None:
            self.store.confirm()

    def skip(self, stream, ident, n):
        """How many leading events of a version 3 batch of `n` with identity `ident` were
        seen before."""
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
        """A publisher bolt started: with fresh state (`restored` None, a first start) its
        numbers begin again for new output, so forget its marks; after a restore (or a
        restart that replays its sources from the start, checkpoint 0) the marks find the
        replayed results."""
        if restored is None:
            self.forget(publisher)
            if self.store is not None:
                self.store.forget(publisher)

    def forget(self, publisher):
        """Forget every mark of `publisher`."""
        for key in [k for k in self.marks if k[0] == publisher]:
            del self.marks[key]
        self.lanes.forget(lambda k: k[0] == publisher)

    # -- the store's view: the marks as plain lists, and its records replayed --
    def state(self):
        """([[publisher, stream, epoch, seq]], [[publisher, stream, lane, last, holes]])."""
        v3 = [[p, s, e, q] for (p, s), (e, q) in self.marks.items()]
        lanes = [
            [*key, last, [list(h) for h in self.lanes.holes.get(key, ())]]
            for key, last in self.lanes.last.items()
        ]
        return v3, lanes

    def load_state(self, v3, lanes):
        """Replace every mark with a `state()` snapshot."""
        self.marks = {(str(p), str(s)): (int(e), int(q)) for p, s, e, q in v3}
        self.lanes.last, self.lanes.holes = {}, {}
        for *key, last, holes in lanes:
            k = tuple(str(x) for x in key)
            self.lanes.last[k] = int(last)
            if holes:
                self.lanes.holes[k] = [[int(a), int(b)] for a, b in holes]

    def replay_runs(self, publisher, stream, runs):
        """Take a recorded version 5 frame's runs again (the same marks as the first time)."""
        for lane, first, n in runs:
            self.lanes.take((publisher, stream, lane), first, n)

    def replay_seqs(self, publisher, stream, epoch, first, n):
        """Take a recorded version 3 frame again."""
        key, end = (publisher, stream), (epoch, first + n - 1)
        last = self.marks.get(key)
        if n and (last is None or end > last):
            self.marks[key] = end

    def ticket(self):
        """Where the store must be durable before a frame handled now is acknowledged."""
        return 0 if self.store is None else self.store.ticket()

    def durable(self):
        """The store's durable offset (a ticket at or below it may be acknowledged)."""
        return float("inf") if self.store is None else self.store.durable()
