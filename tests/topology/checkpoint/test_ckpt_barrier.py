"""Barrier alignment with several input channels."""

from topology.checkpoint.barrier import Aligner


def make(channels):
    log = []
    aligner = Aligner(
        channels, lambda item: log.append(item), lambda cid, waited: log.append(("snapshot", cid))
    )
    return aligner, log


def test_a_channel_past_the_barrier_is_buffered_until_every_channel_sent_it():
    aligner, log = make({1, 2})
    aligner.receive(1, "a1")
    aligner.receive(1, barrier=5)
    aligner.receive(1, "a2")  # after its barrier: must wait
    aligner.receive(2, "b1")  # channel 2 is not at the barrier yet: goes on
    assert log == ["a1", "b1"]
    aligner.receive(2, barrier=5)
    aligner.receive(2, "b2")
    assert log == ["a1", "b1", ("snapshot", 5), "a2", "b2"]
    assert not aligner.aligning


def test_buffered_messages_keep_their_order_and_may_hold_the_next_barrier():
    aligner, log = make({1, 2})
    aligner.receive(1, barrier=1)
    for item in ("a1", "a2"):
        aligner.receive(1, item)
    aligner.receive(1, barrier=2)
    aligner.receive(1, "a3")
    aligner.receive(2, "b1")
    aligner.receive(2, barrier=1)
    # checkpoint 1 done; a1 a2 released; 2 starts aligning with channel 1: a3 held again
    assert log == ["b1", ("snapshot", 1), "a1", "a2"]
    aligner.receive(2, "b2")
    aligner.receive(2, barrier=2)
    assert log == ["b1", ("snapshot", 1), "a1", "a2", "b2", ("snapshot", 2), "a3"]


def test_a_newer_barrier_abandons_the_older_alignment_without_losing_messages():
    aligner, log = make({1, 2})
    aligner.receive(1, barrier=3)
    aligner.receive(1, "a1")
    aligner.receive(2, barrier=4)  # channel 2 never sent 3: 3 is abandoned
    assert log == ["a1"] and aligner.current == 4 and aligner.abandoned == 1
    aligner.receive(1, barrier=3)  # stale
    aligner.receive(1, barrier=4)
    assert log == ["a1", ("snapshot", 4)]


def test_a_single_input_snapshots_at_once():
    aligner, log = make({9})
    aligner.receive(9, "x")
    aligner.receive(9, barrier=1)
    aligner.receive(9, "y")
    assert log == ["x", ("snapshot", 1), "y"]
