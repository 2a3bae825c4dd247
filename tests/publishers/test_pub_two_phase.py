"""Exactly-once file and Redis sinks (issue 11): staged (pending) output is invisible until its
checkpoint commits, a restart discards what it did not cover, and a sink built again after a
crash (between the phases, or mid-commit) has every row exactly once."""

import json

import pytest
import redis

from cep.protocol.frames import Identity
from publishers.sinks import build_sink
from publishers.staged_file import StagedFileSink


def rows(first, n):
    return [(1000 + i, (i,)) for i in range(first, first + n)]


def file_sink(path):
    return build_sink(
        {"type": "file", "options": {"path": str(path), "delivery": "exactly-once"}}, "S"
    )


def file_rows(path):
    return (
        [json.loads(line)["data"][0] for line in path.read_text().splitlines()]
        if path.exists()
        else []
    )


def redis_sink(url, key="eo"):
    return build_sink(
        {"type": "redis", "options": {"url": url, "key": key, "delivery": "exactly-once"}}, "S"
    )


def redis_rows(url, key="eo"):
    client = redis.Redis.from_url(url, decode_responses=True)
    return [json.loads(fields["data"])[0] for _, fields in client.xrange(key)]


@pytest.fixture(params=["file", "redis"])
def kind(request, tmp_path):
    """(new sink, rows a reader sees) for each exactly-once sink type."""
    if request.param == "file":
        path = tmp_path / "out.jsonl"
        return lambda: file_sink(path), lambda: file_rows(path)
    url = request.getfixturevalue("redis_db")
    return lambda: redis_sink(url), lambda: redis_rows(url)


def test_pending_output_is_invisible_until_its_checkpoint_commits(kind):
    new, visible = kind
    sink = new()
    assert sink.delivery == "exactly-once"
    sink.restart("p", None)
    sink.stage(rows(0, 5), Identity("p", 0, 0))  # epoch 0: before barrier 1
    sink.stage(rows(5, 3), Identity("p", 1, 0))  # epoch 1
    assert visible() == []
    sink.commit(1)  # checkpoint 1 covers epoch 0 only
    assert visible() == [0, 1, 2, 3, 4]
    sink.commit(1)  # a repeated notice changes nothing
    sink.commit(2)
    assert visible() == list(range(8))
    sink.close()


def test_a_restart_discards_what_its_checkpoint_did_not_cover_and_drops_replays(kind):
    new, visible = kind
    sink = new()
    sink.restart("p", None)
    sink.restart("q", None)
    sink.stage(rows(0, 4), Identity("p", 0, 0))
    sink.stage(rows(100, 2), Identity("q", 0, 0))  # another publisher bolt instance
    sink.stage(rows(4, 4), Identity("p", 2, 0))  # after barrier 2, never completed
    sink.restart("p", 2)  # the bolt restored checkpoint 2: commit it, abort p's epoch 2
    assert sorted(visible()) == [0, 1, 2, 3, 100, 101]
    assert sink.discarded == 4
    sink.stage(rows(2, 2), Identity("p", 0, 2))  # a restored queue re-sends these
    sink.stage(rows(4, 4), Identity("p", 2, 0))  # the replay regenerates epoch 2
    sink.stage(rows(8, 1), Identity("p", 2, 4))
    sink.commit(3)
    assert sorted(visible()) == list(range(9)) + [100, 101]
    assert sink.duplicates == 2
    sink.close()


def test_a_crash_between_the_phases_keeps_staged_output_and_marks(kind):
    new, visible = kind
    sink = new()
    sink.restart("p", None)
    sink.stage(rows(0, 3), Identity("p", 0, 0))
    sink.commit(1)
    sink.stage(rows(3, 3), Identity("p", 1, 0))  # staged, then the worker dies
    del sink  # no close(): a crash
    again = new()
    assert visible() == [0, 1, 2]
    again.stage(rows(2, 1), Identity("p", 0, 2))  # a committed one re-sent
    again.stage(rows(3, 3), Identity("p", 1, 0))  # re-sent after the crash: duplicates
    again.stage(rows(6, 1), Identity("p", 1, 3))
    again.commit(2)
    assert visible() == list(range(7))
    again.close()


def test_file_commit_cut_by_a_crash_is_finished_once(tmp_path):
    path = tmp_path / "out.jsonl"
    sink = file_sink(path)
    sink.restart("p", None)
    sink.stage(rows(0, 50), Identity("p", 0, 0))
    sink.stage(rows(50, 50), Identity("q", 0, 0))
    # phase 2 cut after the intent and part of the append (a reader saw rows 0..k only)
    segments = [[e, p, *seg] for (e, p), segs in sorted(sink.staged.items()) for seg in segs]
    sink._write_state({"checkpoint": 1, "size": 0, "segments": segments})
    first = (tmp_path / ".out.jsonl.staging" / segments[0][4]).read_bytes()
    path.write_bytes(first[: len(first) // 2 + 7])  # a torn line in the middle
    del sink
    again = file_sink(path)
    assert sorted(file_rows(path)) == list(range(100))  # each row once, the torn one whole
    assert again.committed == 1 and again.pending_events() == 0
    again.stage(rows(0, 50), Identity("p", 0, 0))  # replay of committed output: dropped
    again.commit(2)
    assert len(file_rows(path)) == 100 and again.duplicates == 50


def test_file_staging_survives_a_torn_segment_tail(tmp_path):
    path = tmp_path / "out.jsonl"
    sink = file_sink(path)
    sink.stage(rows(0, 3), Identity("p", 0, 0))
    seg = next((tmp_path / ".out.jsonl.staging").iterdir())
    with open(seg, "a") as fh:
        fh.write('{"stream": "S", "timest')  # the crash cut this write
    again = StagedFileSink("S", {"path": str(path)})
    assert again.pending_events() == 3
    again.stage(rows(3, 1), Identity("p", 0, 3))
    again.commit(1)
    assert file_rows(path) == [0, 1, 2, 3]


def test_redis_commit_is_one_atomic_step_and_shared_by_workers(redis_db):
    first, second = redis_sink(redis_db, "shared"), redis_sink(redis_db, "shared")
    first.stage(rows(0, 2), Identity("p", 0, 0))  # worker 1 got bolt p's output
    second.stage(rows(2, 2), Identity("q", 0, 0))  # worker 2 got bolt q's output
    client = redis.Redis.from_url(redis_db, decode_responses=True)
    assert client.xlen("shared") == 0
    second.commit(1)  # one notice commits both
    assert sorted(redis_rows(redis_db, "shared")) == [0, 1, 2, 3]
    assert client.hget("shared:eo:state", "committed") == "1"
    assert client.smembers("shared:eo:staged") == set()


def lane_rows(lane, first, n):
    return [(1000 + i, (f"{lane}{i}",)) for i in range(first, first + n)]


def test_lineage_replays_cut_and_interleaved_anew_are_committed_once(kind):
    """Frames v5: two lanes a, b; the replay after the restore of checkpoint 2 re-sends the
    restored queue and regenerates epoch 2 with other cuts and another interleaving."""
    new, visible = kind
    sink = new()
    sink.restart("p", None)
    sink.stage(
        lane_rows("a", 0, 3) + lane_rows("b", 0, 2), Identity("p", 1, 0, (("a", 0, 3), ("b", 0, 2)))
    )
    sink.commit(2)  # a0-a2, b0-b1 committed
    sink.stage(
        lane_rows("b", 2, 2) + lane_rows("a", 3, 2), Identity("p", 2, 5, (("b", 2, 2), ("a", 3, 2)))
    )
    sink.restart("p", 2)  # epoch 2 discarded
    sink.stage(lane_rows("b", 1, 1), Identity("p", 1, 4, (("b", 1, 1),)))  # restored queue
    sink.stage(lane_rows("a", 3, 1), Identity("p", 2, 0, (("a", 3, 1),)))
    sink.stage(
        lane_rows("b", 2, 3) + lane_rows("a", 4, 1), Identity("p", 2, 1, (("b", 2, 3), ("a", 4, 1)))
    )
    sink.commit(3)
    want = [f"a{i}" for i in range(5)] + [f"b{i}" for i in range(5)]
    assert sorted(visible()) == sorted(want) and len(visible()) == 10
    assert sink.duplicates == 1
    sink.close()


def test_lineage_marks_survive_a_crash_between_the_phases(kind):
    new, visible = kind
    sink = new()
    sink.restart("p", None)
    sink.stage(lane_rows("a", 0, 3), Identity("p", 0, 0, (("a", 0, 3),)))
    sink.commit(1)
    sink.stage(lane_rows("a", 3, 2), Identity("p", 1, 0, (("a", 3, 2),)))
    del sink  # the worker dies
    again = new()
    again.stage(lane_rows("a", 2, 4), Identity("p", 1, 0, (("a", 2, 4),)))
    assert again.duplicates == 3  # a2 committed, a3-a4 staged
    again.commit(2)
    assert visible() == [f"a{i}" for i in range(6)]
    again.close()
