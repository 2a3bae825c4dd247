"""The duplicate marks file (publishers/marks_log.py): a Dedup loaded from it answers as the
one that wrote it; an unconfirmed frame, a torn or damaged file and a failed write are logged
and counted, never raised; the file is compacted and forgets publishers that start fresh;
with durability fsync the publisher service answers a frame only once its marks are synced."""

import logging
import os
import threading
import time

import pytest
import zmq

from cep.protocol.frames import Identity, encode_control, encode_output
from publishers.delivery import Dedup
from publishers.marks_log import MAGIC, MarksLog
from publishers.service import PublisherService, numbered
from publishers.sink_set import SinkSet
from tests.manager.test_manager_registry_locality import Recording

PUB, OTHER = "Plan[-1234]:pub:0", "Plan[-1234]:pub:1"


def events(first, n):
    return [(1000 + i, (i,)) for i in range(first, first + n)]


def v5(pub, runs, epoch=0):
    """(identity, events) of a version 5 frame with `runs` [(lane, first, n)]."""
    n = sum(r[2] for r in runs)
    return Identity(pub, epoch, 0, tuple(runs)), events(runs[0][1], n)


def frames_with_holes():
    """Frames of two publishers and streams: lane a in order, lane b with a gap that a late
    frame partly fills, version 3 frames, and a replay of an earlier frame."""
    return [
        ("Out", *v5(PUB, [("a", 0, 5)])),
        ("Out", *v5(PUB, [("b", 0, 3), ("a", 5, 2)])),
        ("Out", *v5(PUB, [("b", 8, 2)])),  # 3..7 of lane b never came (a hole)
        ("Out", *v5(PUB, [("b", 4, 2)])),  # 4, 5 fill part of it
        ("Alerts", *v5(OTHER, [("a", 0, 4)], epoch=3)),
        ("Out", *v5(PUB, [("a", 3, 4)])),  # a replay: all seen
        ("Out", Identity(OTHER, 2, 0), events(0, 6)),  # version 3
        ("Out", Identity(OTHER, 2, 4), events(4, 5)),
    ]


def probes():
    """Frames to ask both Dedups about: every frame again, the holes, and new numbers."""
    return frames_with_holes() + [
        ("Out", *v5(PUB, [("b", 3, 5)])),  # 3 and 6, 7 are still holes
        ("Out", *v5(PUB, [("a", 6, 4)])),
        ("Out", *v5(PUB, [("c", 0, 2)])),
        ("Alerts", *v5(OTHER, [("a", 2, 4)], epoch=3)),
        ("Out", Identity(OTHER, 2, 7), events(7, 5)),
        ("Out", Identity(OTHER, 1, 0), events(0, 2)),  # an older epoch: seen
    ]


def feed(dedup, frames):
    for stream, ident, evs in frames:
        dedup.fresh(stream, ident, evs)
        dedup.taken()  # the sinks took it


def answers(dedup):
    out = []
    for stream, ident, evs in probes():
        out.append(dedup.fresh(stream, ident, evs))
        dedup.taken()
    return out


def opened(path, durability="os", **kw):
    dedup = Dedup("test")
    store = MarksLog(str(path), durability, "test", **kw).open(dedup)
    return dedup, store


def test_a_reloaded_dedup_answers_as_the_one_that_wrote_the_file(tmp_path):
    path = tmp_path / "m" / "plan.marks"
    first, _ = opened(path)
    feed(first, frames_with_holes())
    # the process is killed: nothing closed, nothing synced; what was written is at the OS
    again, store = opened(path)
    assert again.state() == first.state() and store.loaded == 4 and store.uncertain == 0
    assert answers(again) == answers(first)
    assert again.lanes.holes == first.lanes.holes  # holes came back too, and were filled alike


def test_a_frame_the_sinks_were_taking_when_the_worker_died_is_counted_not_marked(tmp_path, caplog):
    path = tmp_path / "plan.marks"
    dedup, _ = opened(path)
    feed(dedup, [("Out", *v5(PUB, [("a", 0, 5)]))])
    ident, evs = v5(PUB, [("a", 3, 4)])
    assert dedup.fresh("Out", ident, evs) == (evs[2:], 2)  # recorded; no taken(): killed
    with caplog.at_level(logging.WARNING, logger="publishers.marks_log"):
        again, store = opened(path)
    assert store.uncertain == 2
    assert "the worker stopped while its sinks took 2 result(s) of " + PUB in caplog.text
    # 0..4 are known; 5 and 6 may or may not have been written: a replay writes them
    assert again.fresh("Out", ident, evs) == (evs[2:], 2)


def test_a_torn_tail_keeps_the_records_before_it(tmp_path, caplog):
    path = tmp_path / "plan.marks"
    dedup, _ = opened(path)
    feed(dedup, [("Out", *v5(PUB, [("a", 0, 5)]))])
    size = path.stat().st_size
    feed(dedup, [("Out", *v5(PUB, [("a", 5, 5)]))])
    with open(path, "r+b") as fh:  # the last write reached the disk only in part
        fh.truncate(path.stat().st_size - 3)
    with caplog.at_level(logging.ERROR, logger="publishers.marks_log"):
        again, store = opened(path)
    assert "unreadable from byte" in caplog.text and "torn record" in caplog.text
    assert store.ignored_bytes > 0 and (tmp_path / "plan.marks.corrupt").exists()
    assert size < (tmp_path / "plan.marks.corrupt").stat().st_size
    # frame 1 is known; frame 2's record lost its confirmation: counted, written again
    assert store.uncertain == 5
    ident, evs = v5(PUB, [("a", 0, 10)])
    assert again.fresh("Out", ident, evs) == (evs[5:], 5)
    # the file was rewritten cleanly: a third open reads it without complaint
    caplog.clear()
    with caplog.at_level(logging.ERROR, logger="publishers.marks_log"):
        third, store3 = opened(path)
    assert not caplog.text and store3.ignored_bytes == 0


def test_a_damaged_record_in_the_middle_keeps_what_comes_before_it(tmp_path, caplog):
    path = tmp_path / "plan.marks"
    dedup, _ = opened(path)
    feed(dedup, [("Out", *v5(PUB, [("a", 0, 5)]))])
    middle = path.stat().st_size
    feed(dedup, [("Out", *v5(PUB, [("b", 0, 5)])), ("Out", *v5(PUB, [("c", 0, 5)]))])
    data = bytearray(path.read_bytes())
    data[middle + 12] ^= 0xFF  # a flipped bit inside the lane b frame's record
    path.write_bytes(bytes(data))
    with caplog.at_level(logging.ERROR, logger="publishers.marks_log"):
        again, store = opened(path)
    assert "checksum does not match" in caplog.text
    assert set(again.lanes.last) == {(PUB, "Out", "a")}  # b and c came after the damage


def test_a_file_that_is_not_a_marks_file_starts_empty_without_crashing(tmp_path, caplog):
    path = tmp_path / "plan.marks"
    path.write_bytes(b"\x00garbage" * 10)
    with caplog.at_level(logging.ERROR, logger="publishers.marks_log"):
        dedup, store = opened(path)
    assert "not a marks file" in caplog.text and store.loaded == 0
    feed(dedup, [("Out", *v5(PUB, [("a", 0, 5)]))])  # and it works from there
    assert path.read_bytes().startswith(MAGIC)
    assert opened(path)[0].state() == dedup.state()


def test_the_file_is_compacted_and_stays_small(tmp_path):
    path = tmp_path / "plan.marks"
    dedup, store = opened(path, compact_bytes=4096)
    for k in range(2000):  # 2,000 frames over 3 lanes
        lane = "abc"[k % 3]
        feed(dedup, [("Out", *v5(PUB, [(lane, k // 3 * 10, 10)]))])
    assert store.compactions > 1
    assert path.stat().st_size < 3 * 4096  # not 2,000 records' worth
    again, _ = opened(path)
    assert again.state() == dedup.state()
    assert answers(again) == answers(dedup)


def test_a_publishers_fresh_start_is_kept_and_compaction_drops_its_marks(tmp_path):
    path = tmp_path / "plan.marks"
    dedup, _ = opened(path)
    feed(dedup, [("Out", *v5(PUB, [("a", 0, 5)])), ("Out", *v5(OTHER, [("a", 0, 5)]))])
    feed(dedup, [("Out", Identity(PUB, 0, 0), events(0, 3))])
    dedup.restart(OTHER, 4)  # restored from a checkpoint: its marks stay
    dedup.restart(PUB, None)  # a first start (a new deployment): numbering begins again
    again, _ = opened(path)
    assert {k[0] for k in again.lanes.last} == {OTHER} and not again.marks
    assert b"pub:0" not in path.read_bytes()  # opening rewrote it as one snapshot


@pytest.mark.parametrize("durability", ["os", "fsync"])
def test_a_failed_write_is_counted_and_the_next_confirmation_rewrites_the_file(
    durability, tmp_path, caplog
):
    path = tmp_path / "plan.marks"
    dedup, store = opened(path, durability)
    feed(dedup, [("Out", *v5(PUB, [("a", 0, 5)]))])
    ident, evs = v5(PUB, [("a", 5, 5)])
    assert dedup.fresh("Out", ident, evs) == (evs, 0)  # recorded
    real = store._fd
    store._fd = os.open(os.devnull, os.O_RDONLY)  # the disk fails: every write (EBADF)
    os.close(real)
    with caplog.at_level(logging.ERROR, logger="publishers.marks_log"):
        store._compact = lambda: None  # and so does the rewrite, this once
        dedup.taken()  # the confirmation is not written
    assert store.errors == 1 and "the marks stay in memory" in caplog.text
    _until(lambda: store.durable() >= store.ticket())  # the frame is not held back
    del store._compact
    store._retry_at = 0.0
    feed(dedup, [("Out", *v5(PUB, [("a", 10, 5)]))])  # the next confirmation rewrites it
    assert store.compactions == 2  # at open, and after the failure
    _until(lambda: store.durable() >= store.ticket())
    assert opened(path)[0].state() == dedup.state()
    store.close()


def _until(cond):
    deadline = time.monotonic() + 30
    while not cond():
        assert time.monotonic() < deadline
        time.sleep(0.01)


class GatedSync:
    """Stands in for the group commit's fdatasync: blocks until opened."""

    def __init__(self, real):
        self.real, self.gate, self.calls = real, threading.Event(), 0

    def __call__(self):
        self.calls += 1
        self.gate.wait(30)
        self.real()


def test_the_service_answers_a_frame_only_once_its_marks_are_synced(tmp_path):
    sinks, sink = SinkSet("marks"), Recording()
    sinks.add("Out", sink)
    store = MarksLog(str(tmp_path / "plan.marks"), "fsync", "marks").open(sinks.dedup)
    gated = store._commit._sync = GatedSync(store._commit._sync)
    svc = PublisherService(sinks, "127.0.0.1").start()
    bolt = zmq.Context.instance().socket(zmq.DEALER)
    bolt.setsockopt(zmq.LINGER, 0)
    bolt.connect(f"tcp://127.0.0.1:{svc.port}")
    try:
        bolt.send_multipart(numbered(1, encode_control("start", PUB, None)))  # a fresh start
        for k in range(3):
            frame = encode_output("Out", events(k * 5, 5), PUB, 0, k * 5, [("a", k * 5, 5)])
            bolt.send_multipart(numbered(k + 2, frame))
        deadline = 200
        while len(sink.rows) < 15 and deadline:
            bolt.poll(50)
            deadline -= 1
        assert len(sink.rows) == 15  # the sinks took every frame
        assert not bolt.poll(300)  # and no answer while the marks are not synced
        gated.gate.set()
        answered = 0
        while answered != 4 and bolt.poll(10_000):
            answered = int.from_bytes(bolt.recv(), "little")
        assert answered == 4 and gated.calls >= 1
        assert store.durable() >= store.ticket()
    finally:
        gated.gate.set()
        bolt.close(0)
        svc.stop()
        store.close()


def test_a_fresh_start_notice_alone_is_answered_once_synced(tmp_path):
    """The notice writes a record (the publisher's marks are forgotten) and nothing follows
    it: the group commit must still sync it, or the answer would never go."""
    sinks = SinkSet("marks")
    sinks.add("Out", Recording())
    store = MarksLog(str(tmp_path / "plan.marks"), "fsync", "marks").open(sinks.dedup)
    feed(sinks.dedup, [("Out", *v5(PUB, [("a", 0, 5)]))])
    svc = PublisherService(sinks, "127.0.0.1").start()
    bolt = zmq.Context.instance().socket(zmq.DEALER)
    bolt.setsockopt(zmq.LINGER, 0)
    bolt.connect(f"tcp://127.0.0.1:{svc.port}")
    try:
        bolt.send_multipart(numbered(1, encode_control("start", PUB, None)))
        assert bolt.poll(30_000) and int.from_bytes(bolt.recv(), "little") == 1
        assert not sinks.dedup.lanes.last and store.durable() >= store.ticket()
    finally:
        bolt.close(0)
        svc.stop()
        store.close()


def test_an_empty_file_is_an_empty_set_of_marks(tmp_path, caplog):
    (tmp_path / "plan.marks").write_bytes(b"")
    with caplog.at_level(logging.WARNING, logger="publishers.marks_log"):
        dedup, store = opened(tmp_path / "plan.marks")
    assert not caplog.text and store.loaded == 0 and store.ignored_bytes == 0
    store.close()
