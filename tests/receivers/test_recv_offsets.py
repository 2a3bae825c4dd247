"""The spout's per-log offset bookkeeping (receivers/offsets.py), without sockets: in order,
once, gaps dropped and a replay asked, holes the log cannot fill skipped and counted lost."""

from cep.protocol.frames import LogPosition
from receivers.offsets import ReceiverOffsets, parse_receiver_id

RID = "host:9090/-1234/Plan/S#a1b2"


def pos(first, rid=RID):
    return LogPosition(rid, first, "http://127.0.0.1:1")


class Recording(ReceiverOffsets):
    """Records replay requests instead of sending them."""

    def __init__(self):
        super().__init__("test", secret="s", retry_s=0.0)
        self.asked = []

    def _ask_replay(self, rid, after):
        self.asked.append((rid, after))


def test_receiver_id_parts():
    assert parse_receiver_id(RID) == ("host:9090", "-1234", "Plan", "S")
    assert parse_receiver_id("a/b/1/P/S#x")[0] == "a/b"  # a worker id may hold a slash


def test_in_order_frames_are_taken_and_the_offset_recorded():
    o = Recording()
    assert o.admit(pos(0), 10) == 0 and o.admit(pos(10), 5) == 0
    assert o.last == {RID: 14} and o.asked == [] and o.snapshot()["control"][RID]


def test_overlap_is_skipped_and_counted_as_duplicates():
    o = Recording()
    o.admit(pos(0), 10)
    assert o.admit(pos(5), 10) == 5  # offsets 5..9 emitted already
    assert o.admit(pos(0), 10) is None  # all of it emitted already
    assert o.duplicates == 15 and o.last[RID] == 14


def test_a_gap_drops_the_frame_and_asks_for_a_replay():
    o = Recording()
    o.admit(pos(0), 10)
    assert o.admit(pos(20), 10) is None
    assert o.asked == [(RID, 9)] and o.gap_drops == 10 and o.last[RID] == 9
    assert o.admit(pos(10), 20) == 0 and o.last[RID] == 29  # the replay fills it


def test_holes_the_log_cannot_supply_are_skipped_and_counted_lost():
    o = Recording()
    o.admit(pos(0), 10)
    o._holes[RID] = [[10, 15]]  # what a replay answer's "missing" puts there
    assert o.admit(pos(15), 5) == 0
    assert o.lost == 5 and o.last[RID] == 19 and o.asked == []


class StartRecording(Recording):
    """Answers a replay-from-start as a worker whose log starts at `first` would."""

    def __init__(self, first=0, missing=()):
        super().__init__()
        self.answer = {
            "first": first,
            "end": first + 100,
            "events": 100,
            "missing": [list(m) for m in missing],
        }
        self.started, self.posts = [], []

    def _ask_start(self, rid):
        self.started.append(rid)

    def _post(self, rid, op, body):
        self.posts.append((rid, op, body))
        return dict(self.answer)


def test_restore_sets_offsets_and_other_receivers_are_independent():
    o = StartRecording(first=5)
    o.restore({"offsets": {RID: 99}, "control": {RID: "http://w:1"}})
    assert o.admit(pos(100), 1) == 0
    other = "h:1/-1234/Plan/S#other"
    # first frame of a log the checkpoint does not know: dropped, the log asked from its start
    assert o.admit(pos(7, rid=other), 3) is None and o.started == [other]
    o.replay_from_start(other)
    # the log from its start, then again after its first offset: the frames dropped while
    # the answer was on its way (the replay's own frames may be among them) come again
    assert o.posts == [
        (other, "replay", {"receiver_id": other, "after": -1}),
        (other, "replay", {"receiver_id": other, "after": 4}),
    ]
    assert o.admit(pos(5, rid=other), 5) == 0  # the replay, from the log's first offset
    assert o.last == {RID: 100, other: 9} and o.lost == 0


def test_no_checkpoint_replays_each_log_from_its_start():
    """A failure before the first checkpoint: nothing the log holds is skipped; a leading
    hole from 0 (segments earlier checkpoints committed) is not counted lost, a later one is."""
    o = StartRecording(first=40, missing=[[0, 40], [60, 62]])
    o.from_start = True
    assert o.admit(pos(90), 10) is None and o.gap_drops == 10 and o.last == {}
    o.replay_from_start(RID)
    assert o.last == {RID: 39}
    assert [b["after"] for _, _, b in o.posts] == [-1, 39]  # 90..99 were dropped meanwhile
    assert o.admit(pos(40), 20) == 0 and o.admit(pos(62), 38) == 0
    assert o.lost == 2 and o.last[RID] == 99 and o.asked == []


def test_a_worker_that_never_answers_the_start_replay_is_given_up():
    o = StartRecording()
    o.from_start, o.gap_timeout_s = True, 0.1
    assert o.admit(pos(50), 10) is None
    import time

    time.sleep(0.15)
    assert o.admit(pos(60), 10) == 0 and o.last == {RID: 69}


def test_a_gap_never_filled_is_given_up_after_the_timeout():
    o = Recording()
    o.gap_timeout_s = 0.2
    o.admit(pos(0), 10)
    assert o.admit(pos(20), 5) is None
    import time

    time.sleep(0.25)
    assert o.admit(pos(25), 5) == 0  # given up: offsets 10..24 counted lost
    assert o.lost == 15 and o.last[RID] == 29 and o.gap_drops == 5
