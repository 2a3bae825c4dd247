"""Fencing of stale stage attempts: a worker takes a topology's output only from its newest
attempt `(driver generation, stage attempt)` (publishers/fencing.py). A zombie task on a
machine that was cut off while Spark ran the stage again elsewhere may still send frames
when the link returns: they are refused and counted, never written, staged or committed."""

import json

import pytest

from cep.protocol import frames
from cep.protocol.exceptions import BadFrameError
from cep.protocol.frames import Control, Identity
from publishers.fencing import Fences, topology_of
from publishers.sink_set import SinkSet
from publishers.bolt import PublisherBolt
from tests.publishers.test_pub_bolt_delivery import rows, send, wait, worker  # noqa: F401
from topology.component import Collector, Context

OLD, NEW = (1000, 7), (1000, 12)  # one driver, stage attempts 7 and 12


def test_frames_carry_the_fence_and_stay_readable_without_it():
    out = frames.encode_output("Out", [(1, [2])], "T:pub:0", 4, 10, None, NEW)
    assert frames.decode_output(out)[2] == Identity("T:pub:0", 4, 10, None, NEW)
    lanes = frames.encode_output("Out", [(1, [2])], "T:pub:0", 4, 10, [("l", 3, 1)], NEW)
    assert frames.decode_output(lanes)[2] == Identity("T:pub:0", 4, 10, (("l", 3, 1),), NEW)
    notice = frames.encode_control("start", "T:pub:0", None, NEW)
    assert frames.decode_output(notice)[2] == Control("start", "T:pub:0", None, NEW)
    assert (
        frames.decode_output(frames.encode_output("Out", [], "T:pub:0", 4, 10))[2].fence is None
    )  # an older sender's frame: no fence
    with pytest.raises(BadFrameError, match="fence must be"):
        frames.decode_output(__import__("msgpack").packb([3, "Out", [], "p", 0, 0, "x"]))


def test_the_newest_attempt_of_a_topology_fences_every_older_one():
    f = Fences()
    assert topology_of("Plan[-1234]:EventPublisherBolt:0") == "Plan[-1234]"
    assert f.admit("T:pub:0", OLD)
    assert f.admit("T:pub:1", NEW)  # the re-run stage is heard from
    assert not f.admit("T:pub:0", OLD, events=5)  # the zombie: refused, though another
    assert f.admit("T:pub:0", NEW)  # instance of the topology raised it
    assert f.admit("U:pub:0", OLD)  # other topologies have their own fence
    assert f.admit("T:pub:0", None)  # no fence: taken as before
    assert f.admit("T:pub:0", (1001, 0))  # a newer driver (generation) wins
    assert not f.admit("T:pub:0", NEW)  # even over a higher attempt of the old one
    assert f.metrics() == {
        "fenced_frames": 2,
        "fenced_events": 5,
        "fences": {"T": [1001, 0], "U": [1000, 7]},
    }


def test_a_stale_attempts_output_and_notices_never_reach_a_sink(tmp_path):
    specs = {
        "S": [
            {"type": "file", "options": {"path": str(tmp_path / "alo.jsonl")}},
            {
                "type": "file",
                "options": {"path": str(tmp_path / "eo.jsonl"), "delivery": "exactly-once"},
            },
        ]
    }
    sset = SinkSet.from_specs(specs, "t")
    data = [(1000 + i, (i,)) for i in range(4)]
    sset.control(Control("start", "T:pub:0", None, OLD))
    sset.dispatch("S", data[:2], Identity("T:pub:0", 0, 0, None, OLD))
    sset.control(Control("start", "T:pub:0", 0, NEW))  # the stage re-ran from its sources' start
    sset.dispatch("S", data[:2], Identity("T:pub:0", 0, 0, None, NEW))
    # the zombie's late frames: output it queued while cut off, and a commit notice
    sset.dispatch("S", data[2:], Identity("T:pub:0", 0, 2, None, OLD))
    sset.control(Control("commit", "T:pub:0", 1, OLD))
    sset.dispatch("S", data[2:], Identity("T:pub:0", 0, 2, None, NEW))
    read = [
        json.loads(line)["data"][0] for line in (tmp_path / "alo.jsonl").read_text().splitlines()
    ]
    assert read == [0, 1, 2, 3], read  # the replayed 0, 1 are duplicates; no zombie row
    assert (
        not (tmp_path / "eo.jsonl").exists() or (tmp_path / "eo.jsonl").read_text() == ""
    )  # the stale commit committed nothing
    assert sset.committed is None and sset.duplicates() == {"S": 2}
    assert sset.metrics()["S"]["fenced"] == 2 and sset.fences.metrics()["fenced_frames"] == 2
    assert sset.publishers["T:pub:0"]["fence"] == list(NEW)
    sset.close()


def _bolt(url, attempt, generation=1000):
    """A publisher bolt of stage attempt `attempt` as a Spark task prepares it."""
    bolt = PublisherBolt(
        {
            "registry": url,
            "tenant": -1234,
            "plan": "Deliver",
            "streams": {"Out": ["seq"]},
            "host": "127.0.0.1",
            "retry_interval": 0.05,
            "connect_timeout": 1.0,
        }
    )
    bolt.prepare(
        Context("Deliver[-1234]", "out", 0, 1, 0, {}, {}, attempt, generation=generation),
        Collector("out", {}),
    )
    return bolt


def test_a_zombie_bolt_on_a_real_socket_publishes_nothing_after_the_new_attempt(worker):  # noqa: F811
    url, svc, out = worker
    zombie = _bolt(url, 7)
    zombie.checkpoint_restored(None)
    send(zombie, 0, 3)
    wait(lambda: rows(out / "all.jsonl") == [0, 1, 2], "the first attempt's output")
    fresh = _bolt(url, 12)  # the stage re-ran (restarted from its sources' start)
    fresh.checkpoint_restored(None, restarted=True)
    send(fresh, 0, 5)
    wait(lambda: len(rows(out / "all.jsonl")) == 8, "the new attempt's output")
    send(zombie, 3, 4)  # the zombie sends on
    wait(lambda: svc.metrics()["fenced_events"] == 4, "the zombie's frame refused")
    send(fresh, 5, 1)
    wait(lambda: len(rows(out / "all.jsonl")) == 9, "the new attempt's next output")
    assert rows(out / "all.jsonl") == [0, 1, 2, 0, 1, 2, 3, 4, 5]  # no zombie row
    m = svc.metrics()
    assert m["fenced_frames"] == 1 and m["fences"] == {"Deliver[-1234]": [1000, 12]}
    zombie.superseded()  # its task learnt it is stale: the queue goes, the sender stops
    wait(lambda: not zombie._sender.is_alive(), "the zombie's sender stopped")
    assert zombie.pending_events == 0
    zombie.cleanup()
    fresh.cleanup()
