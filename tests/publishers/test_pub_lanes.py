"""Deduplication by lane (frames v5): results carry the lane they travelled on and their number
in it, so a replay that cuts its batches differently and interleaves the upstream instances
differently is still recognised result by result.

The property tests model what a failure does: the publisher sends its lanes' results in some
interleaving and batching, the worker takes a prefix of those frames, then the bolt restores a
checkpoint (each lane back to some number at or below what the worker took) and sends the rest
again, cut and interleaved anew. The sink must then hold every result exactly once, in each
lane's order; a failure names the shifted results."""

import collections
import json
import logging
import random

import pytest
from hypothesis import given, settings, strategies as st

from cep.protocol import frames
from cep.protocol.exceptions import BadFrameError
from cep.protocol.frames import Control, Identity
from publishers.base import Sink
from publishers.delivery import Dedup, LaneMarks
from publishers.sink_set import SinkSet
from publishers.staged_file import StagedFileSink

PUB = "T[-1234]:EventPublisherBolt:0"


class Rows(Sink):
    type = "rows"

    def __init__(self):
        super().__init__("Out", {})
        self.rows = []

    def write_batch(self, events):
        self.rows.extend(events)


def frames_of(items, rng, max_batch):
    """Cut a sequence of (lane, number) into frames: (events, runs) with runs per lane piece."""
    out, at = [], 0
    while at < len(items):
        n = rng.randint(1, max_batch)
        chunk = items[at : at + n]
        at += n
        runs = []
        for lane, num in chunk:
            if runs and runs[-1][0] == lane and runs[-1][1] + runs[-1][2] == num:
                runs[-1] = (lane, runs[-1][1], runs[-1][2] + 1)
            else:
                runs.append((lane, num, 1))
        out.append(([(num, (lane, num)) for lane, num in chunk], tuple(runs)))
    return out


def interleave(lanes, starts, rng):
    """Every lane's numbers from its start on, lanes interleaved at random, each in order."""
    queues = {lane: list(range(starts[lane], n)) for lane, n in lanes.items()}
    out = []
    while any(queues.values()):
        lane = rng.choice([k for k, q in queues.items() if q])
        take = rng.randint(1, 20)
        out.extend((lane, num) for num in queues[lane][:take])
        del queues[lane][:take]
    return out


def scenario(seed, n_lanes, max_batch, crash_frac):
    rng = random.Random(seed)
    lanes = {f"w1/-1234/P/S#a|f:{i}": rng.randint(0, 300) for i in range(n_lanes)}
    first = frames_of(interleave(lanes, dict.fromkeys(lanes, 0), rng), rng, max_batch)
    taken = first[: int(len(first) * crash_frac)]
    got = collections.Counter(lane for events, _ in taken for _, (lane, _) in events)
    restore = {lane: rng.randint(0, got[lane]) for lane in lanes}  # a checkpoint's numbers
    replay = frames_of(interleave(lanes, restore, rng), rng, max_batch)
    return lanes, taken, replay


def check_exactly_once(lanes, rows):
    seen = collections.defaultdict(list)
    for _, (lane, num) in rows:
        seen[lane].append(num)
    for lane, n in lanes.items():
        shifted = [x for x, c in collections.Counter(seen[lane]).items() if c > 1]
        lost = sorted(set(range(n)) - set(seen[lane]))
        assert not shifted and not lost, f"lane {lane}: duplicates {shifted[:20]}, lost {lost[:20]}"
        assert seen[lane] == list(range(n)), f"lane {lane} out of order"


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    n_lanes=st.integers(1, 4),
    max_batch=st.integers(1, 400),
    crash_frac=st.floats(0, 1),
)
def test_at_least_once_dedup_gives_exactly_once_over_rechunked_reinterleaved_replays(
    seed, n_lanes, max_batch, crash_frac
):
    lanes, taken, replay = scenario(seed, n_lanes, max_batch, crash_frac)
    sset, sink = SinkSet("t"), Rows()
    sset.add("Out", sink)
    epoch = 0
    for events, runs in taken:
        sset.dispatch("Out", events, Identity(PUB, epoch, 0, runs))
    sset.control(Control("start", PUB, 3))
    for events, runs in replay:
        sset.dispatch("Out", events, Identity(PUB, 3, 0, runs))
    check_exactly_once(lanes, sink.rows)
    assert sink.dedup_dropped == sset.duplicates()["Out"]
    assert sset.duplicates()["Out"] == sum(len(e) for e, _ in taken) + sum(
        len(e) for e, _ in replay
    ) - sum(lanes.values())


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    n_lanes=st.integers(1, 3),
    max_batch=st.integers(1, 200),
    cut_frac=st.floats(0, 1),
    pending_frac=st.floats(0, 1),
    crash_frac=st.floats(0, 1),
)
def test_exactly_once_file_sink_commits_each_result_once_across_a_restore(
    tmp_path_factory, seed, n_lanes, max_batch, cut_frac, pending_frac, crash_frac
):
    """Epoch 1 (before checkpoint 2's barrier) is staged and committed; the run goes on in
    epoch 2 until a crash; the bolt restores checkpoint 2: it re-sends the frames that were
    still queued at the checkpoint (the tail of epoch 1), then the replay, re-cut and
    re-interleaved, from the checkpoint's numbers. The file holds every result once."""
    rng = random.Random(seed)
    lanes = {f"w1/-1234/P/S#a|f:{i}": rng.randint(0, 300) for i in range(n_lanes)}
    first = frames_of(interleave(lanes, dict.fromkeys(lanes, 0), rng), rng, max_batch)
    cut = int(len(first) * cut_frac)
    crash = cut + int((len(first) - cut) * crash_frac)
    pending = cut - int(cut * pending_frac)  # frames queued in the bolt at the checkpoint
    at_checkpoint = collections.Counter(
        lane for events, _ in first[:cut] for _, (lane, _) in events
    )
    path = tmp_path_factory.mktemp("eo") / "out.jsonl"
    sink = StagedFileSink("Out", {"path": str(path)})
    for events, runs in first[:cut]:
        sink.stage(events, Identity(PUB, 1, 0, runs))
    sink.commit(2)  # checkpoint 2 covers epoch 1
    for events, runs in first[cut:crash]:
        sink.stage(events, Identity(PUB, 2, 0, runs))
    sink.restart(PUB, 2)  # discards epoch 2; the replay regenerates it
    for events, runs in first[pending:cut]:  # the restored queue, as it was
        sink.stage(events, Identity(PUB, 1, 0, runs))
    replay = frames_of(interleave(lanes, {k: at_checkpoint[k] for k in lanes}, rng), rng, max_batch)
    for events, runs in replay:
        sink.stage(events, Identity(PUB, 2, 0, runs))
    sink.commit(3)
    sink.close()
    rows = (
        [tuple(json.loads(line)["data"]) for line in path.read_text().splitlines()]
        if path.exists()
        else []
    )
    check_exactly_once(lanes, [(0, tuple(r)) for r in rows])


def test_staged_lane_marks_survive_a_worker_restart(tmp_path):
    path = tmp_path / "out.jsonl"
    sink = StagedFileSink("Out", {"path": str(path)})
    sink.stage([(1, ("a", 0)), (2, ("a", 1))], Identity(PUB, 1, 0, (("a", 0, 2),)))
    sink.commit(2)
    sink.stage([(3, ("a", 2))], Identity(PUB, 2, 2, (("a", 2, 1),)))
    sink.close()
    again = StagedFileSink("Out", {"path": str(path)})  # the worker restarted
    again.stage([(2, ("a", 1)), (3, ("a", 2)), (4, ("a", 3))], Identity(PUB, 2, 1, (("a", 1, 3),)))
    assert again.duplicates == 2  # 1 was committed, 2 staged before the restart
    again.commit(3)
    again.close()
    rows = [json.loads(line)["data"][1] for line in path.read_text().splitlines()]
    assert rows == [0, 1, 2, 3]


def test_a_gap_is_logged_as_an_error_and_a_late_result_fills_it(caplog):
    marks = LaneMarks("w1")
    assert marks.take("a", 0, 5) == ([(0, 5)], 0)
    with caplog.at_level(logging.ERROR, logger="publishers.delivery"):
        assert marks.take("a", 8, 2) == ([(0, 2)], 0)  # 5..7 never came
    assert marks.gaps == 3 and "results 5..7 of lane a never reached this worker" in caplog.text
    fresh, dups = marks.take("a", 4, 3)  # 4 is a duplicate, 5 and 6 fill the hole
    assert fresh == [(1, 3)] and dups == 1 and marks.filled == 2
    assert marks.take("a", 7, 1) == ([(0, 1)], 0)  # the last of the hole: taken, not dropped
    assert marks.take("a", 5, 5) == ([], 5)  # all seen now
    assert not marks.holes


def test_first_start_forgets_a_publishers_lanes_a_restart_keeps_them():
    dedup = Dedup()
    ident = Identity(PUB, 0, 0, (("a", 0, 3),))
    assert dedup.fresh("Out", ident, [1, 2, 3]) == ([1, 2, 3], 0)
    dedup.restart(PUB, 0)  # a restart before the first checkpoint: the sources replay
    assert dedup.fresh("Out", ident, [1, 2, 3]) == ([], 3)
    dedup.restart(PUB, None)  # a first start (a new deployment): numbers begin again
    assert dedup.fresh("Out", ident, [7, 8, 9]) == ([7, 8, 9], 0)


def test_dedup_is_per_stream_and_per_publisher():
    dedup = Dedup()
    assert dedup.fresh("A", Identity(PUB, 0, 0, (("a", 0, 2),)), [1, 2]) == ([1, 2], 0)
    assert dedup.fresh("B", Identity(PUB, 0, 0, (("a", 0, 2),)), [1, 2]) == ([1, 2], 0)
    assert dedup.fresh("A", Identity("other", 0, 0, (("a", 0, 2),)), [1, 2]) == ([1, 2], 0)
    assert dedup.fresh("A", Identity(PUB, 5, 0, (("a", 1, 2),)), [2, 3]) == ([3], 1)


def test_v5_frames_round_trip_and_bad_runs_are_refused():
    data = frames.encode_output("Out", [(1, [2]), (2, [3])], PUB, 4, 10, [("a", 7, 1), ("b", 0, 1)])
    assert frames.decode_output(data) == (
        "Out",
        ((1, (2,)), (2, (3,))),
        Identity(PUB, 4, 10, (("a", 7, 1), ("b", 0, 1))),
    )
    with pytest.raises(BadFrameError, match="cover the events"):
        frames.decode_output(frames.encode_output("Out", [(1, [2])], PUB, 4, 10, [("a", 0, 2)]))
    with pytest.raises(BadFrameError, match="version 5"):
        frames.decode_output(frames.encode_output("Out", [(1, [2])], PUB, 4, 10, [(1, 0, 1)]))
