"""Lineage: which input lane each row of a batch came from, so that output keeps an identity
that a replay cannot shift.

A batch's lineage is a tuple of runs ``(key, first_seq, count)`` that cover its rows in order.
The key names a FIFO *lane*: a receiver's write-ahead log (its receiver id), extended by one
``component:index`` per bolt instance the rows passed through. Along one lane rows keep their
order, and every grouping sends a row down the same lane again on replay:
- fields, all and global groupings route by content;
- a shuffle grouping routes a row with lineage by its sequence number in its lane
  (``shuffle_task``), not by the batch count, so the same events reach the same instance
  whatever the batch boundaries were.

``first_seq`` is the sequence number of the run's first row in its lane as counted by the
component that emitted it (a spout: the log offset; a bolt: its own per-lane counter, kept in
its checkpoint). After a fields grouping split a run, the rows of a sub-run are no longer
consecutive in that numbering; a receiver therefore uses a run's key and count only and
numbers its input again. A batch without lineage (``None``) routes and counts as before.
"""

import zlib

SHUFFLE_BLOCK = 512  # a shuffle sends a lane's rows to one instance in blocks of this many


def lane_key(key, component, index):
    """The key of the lane a bolt instance's output of input lane `key` travels on."""
    return f"{key}|{component}:{index}"


def total(lineage):
    return sum(run[2] for run in lineage)


def runs_of(lineage, rows):
    """[(key, first_seq, rows of the run)] pairing each run with its rows."""
    out, at = [], 0
    for key, first, n in lineage:
        out.append((key, first, rows[at : at + n]))
        at += n
    return out


def row_lineage(lineage, i):
    """The one-row lineage of row `i` of a batch."""
    at = 0
    for key, first, n in lineage:
        if i < at + n:
            return ((key, first + i - at, 1),)
        at += n
    raise IndexError(f"row {i} is beyond the lineage's {at} rows")


def append_run(runs, key, first, n):
    """Add a run to a list of runs, merging it into the last one when it continues it."""
    if not n:
        return
    if runs and runs[-1][0] == key and runs[-1][1] + runs[-1][2] == first:
        last = runs[-1]
        runs[-1] = (key, last[1], last[2] + n)
    else:
        runs.append((key, first, n))


def shuffle_task(key, seq, n_tasks):
    """The instance (0..n_tasks-1) a shuffle grouping sends row `seq` of lane `key` to."""
    return (zlib.crc32(key.encode()) + seq // SHUFFLE_BLOCK) % n_tasks


def split_shuffle(rows, lineage, n_tasks):
    """[(task index, rows, lineage)] of a shuffle grouping over batch `rows` with lineage:
    each lane's rows go by block of their sequence numbers."""
    parts = {}
    at = 0
    for key, first, n in lineage:
        offset = 0
        while offset < n:
            seq = first + offset
            take = min(n - offset, SHUFFLE_BLOCK - seq % SHUFFLE_BLOCK)
            task = shuffle_task(key, seq, n_tasks)
            part = parts.setdefault(task, ([], []))
            part[0].extend(rows[at + offset : at + offset + take])
            append_run(part[1], key, seq, take)
            offset += take
        at += n
    return [(task, part_rows, tuple(runs)) for task, (part_rows, runs) in sorted(parts.items())]


def encode(lineage):
    """Lineage for the wire (msgpack): a list of [key, first, count], or None."""
    return None if lineage is None else [list(run) for run in lineage]


def decode(value):
    """Lineage from the wire; ValueError when it is not a list of [str, int, int]."""
    if value is None:
        return None
    runs = []
    for run in value:
        if (
            len(run) != 3
            or not isinstance(run[0], str)
            or type(run[1]) is not int
            or type(run[2]) is not int
            or run[2] < 0
        ):
            raise ValueError(f"a lineage run must be [key, first seq, count], got {run!r}")
        runs.append((run[0], run[1], run[2]))
    return tuple(runs)
