"""Groupings at run time: split an emitted batch into per-task batches.

Fields grouping uses a stable hash (crc32 of the msgpack encoding of the grouping values),
identical in every process, unlike Python's salted ``hash``.
"""

import operator
import zlib
from dataclasses import dataclass

import msgpack

from topology.exceptions import RoutingError
from topology.lineage import split_shuffle
from topology.model import ALL, FIELDS, GLOBAL, SHUFFLE

_packb = msgpack.Packer(use_bin_type=True).pack
# keys whose bucket may be memoised: exact str/int only, since 1 == 1.0 == True in a dict
# but they pack (and hash) differently
_MEMO_TYPES = (str, int)
_MEMO_LIMIT = 65536


def stable_hash(values):
    """crc32 of msgpack(values): the same in every process and Python version."""
    return zlib.crc32(_packb(values))


@dataclass
class Route:
    """One consumer subscription: target component, grouping kind, key getter, task ids."""

    target: str
    kind: str
    tasks: list
    key: object = None
    next_index: int = 0
    memo: dict = None

    def split(self, rows, lineage=None):
        """[(task id, rows, lineage)] for this route, plus the rows that could not be routed.
        With lineage a shuffle goes by each lane's sequence numbers (topology/lineage.py), so
        a replay sends every row to the instance it went to the first time."""
        tasks = self.tasks
        if self.kind == SHUFFLE:
            if lineage is not None:
                return [
                    (tasks[i], part, runs)
                    for i, part, runs in split_shuffle(rows, lineage, len(tasks))
                ], []
            task = tasks[self.next_index % len(tasks)]
            self.next_index += 1
            return [(task, rows, None)], []
        if self.kind == ALL:
            return [(t, rows, lineage) for t in tasks], []
        if self.kind == GLOBAL:
            return [(tasks[0], rows, lineage)], []
        if lineage is None:
            parts, bad = self._split_fields(rows)
            return [(task, part, None) for task, part in parts], bad
        return self._split_fields_lineage(rows, lineage)

    def _split_fields_lineage(self, rows, lineage):
        """A fields grouping run by run: each part's lineage counts its rows per lane."""
        parts, bad, at = {}, [], 0
        for key, first, n in lineage:
            run_parts, run_bad = self._split_fields(rows[at : at + n])
            at += n
            bad.extend(run_bad)
            for task, part in run_parts:
                if not part:
                    continue
                got = parts.setdefault(task, ([], []))
                got[0].extend(part)
                runs = got[1]
                if runs and runs[-1][0] == key:  # the same lane: one run (counts only)
                    runs[-1] = (key, runs[-1][1], runs[-1][2] + len(part))
                else:
                    runs.append((key, first, len(part)))
        return [(task, part, tuple(runs)) for task, (part, runs) in parts.items()], bad

    def _split_fields(self, rows):
        key, n, tasks = self.key, len(self.tasks), self.tasks
        if n == 1:
            bad = _bad_rows(rows, key)
            return (
                [(tasks[0], [r for r in rows if id(r) not in bad])] if bad else [(tasks[0], rows)]
            ), list(bad.values())
        buckets = [[] for _ in range(n)]
        bad = []
        if self.memo is None or len(self.memo) > _MEMO_LIMIT:
            self.memo = {}
        memo, crc, pack, memo_types = self.memo, zlib.crc32, _packb, _MEMO_TYPES
        for row in rows:
            try:
                k = key(row)
                if type(k) in memo_types:
                    bucket = memo.get(k)
                    if bucket is None:
                        bucket = memo[k] = crc(pack(k)) % n
                else:
                    bucket = crc(pack(k)) % n
                buckets[bucket].append(row)
            except (IndexError, TypeError, ValueError) as exc:
                bad.append((row, exc))
        return [(tasks[i], b) for i, b in enumerate(buckets) if b], bad


def _bad_rows(rows, key):
    """Rows that lack the grouping fields (checked only when there is one target)."""
    bad = {}
    for row in rows:
        try:
            key(row)
        except (IndexError, TypeError) as exc:
            bad[id(row)] = (row, exc)
    return bad


def build_routes(topology, component_id):
    """{stream: [Route]} for everything subscribed to ``component_id``'s streams."""
    task_ids = topology.task_ids()
    source = topology.components[component_id]
    routes = {stream: [] for stream in source.outputs}
    for bolt in topology.bolts:
        for inp in bolt.inputs:
            if inp.source != component_id:
                continue
            key = None
            if inp.grouping.kind == FIELDS:
                fields = source.outputs[inp.stream]
                key = operator.itemgetter(*[fields.index(f) for f in inp.grouping.fields])
            routes[inp.stream].append(Route(bolt.id, inp.grouping.kind, task_ids[bolt.id], key))
    return routes


def split_batch(routes, stream, rows, lineage=None):
    """Route one emitted batch: ([(task id, rows, lineage)], [(bad row, error)])."""
    out, bad = [], []
    for route in routes.get(stream, ()):
        parts, errors = route.split(rows, lineage)
        out.extend(parts)
        bad.extend(errors)
    return out, bad


def describe_bad(component_id, stream, row, exc):
    """A RoutingError naming the component, stream and row."""
    return RoutingError(
        f"component {component_id!r} stream {stream!r}: cannot route row {row!r}: {exc}"
    )
