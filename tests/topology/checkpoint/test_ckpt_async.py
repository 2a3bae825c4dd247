"""Asynchronous snapshots (issue 11): the bolt's task thread only takes the copy and forwards
the barrier; compression, checksum and the write run on the writer thread while the bolt goes
on processing, and the ack goes out once the blob is stored. The blob holds the state of the
barrier's moment, not what the bolt processed while it was written."""

import threading

from tests.topology.checkpoint.ckpt_components import SeenBolt  # noqa: F401 - by path below
from topology.checkpoint.participant import Participant
from topology.checkpoint.store import FileStore
from topology.component import Batch
from topology.instance import Instance
from topology.model import Topology


CH = 1  # the spout's task id: the bolt's only input channel


class SlowStore(FileStore):
    """A file store whose writes wait until the test releases them."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.release, self.writer_threads = threading.Event(), set()

    def write_blob(self, cid, task, blob):
        self.writer_threads.add(threading.current_thread().name)
        assert self.release.wait(10)
        return super().write_blob(cid, task, blob)


class BrokenStore(FileStore):
    def write_blob(self, cid, task, blob):
        raise OSError("disk full")


def bolt_participant(store, asynchronous=True):
    t = Topology("async-ckpt")
    t.add_spout(
        "s",
        "tests.topology.checkpoint.ckpt_components:OffsetSpout",
        outputs=["n"],
        config={"rows": []},
    )
    t.add_bolt(
        "seen", "tests.topology.checkpoint.ckpt_components:SeenBolt", inputs={"s": "shuffle"}
    )
    task = t.task_ids()["seen"][0]
    inst = Instance(t, "seen", 0, task)
    inst.open()
    events = []
    part = Participant(
        inst,
        t,
        {},
        lambda cid: events.append(("barrier", cid)),
        lambda report: events.append(("ack", report)),
        store=store,
        asynchronous=asynchronous,
    )
    part.process = lambda item: inst.execute(Batch([item], "n", "s"))
    assert part.aligner.channels == {CH}
    return part, inst, events, task


def test_the_bolt_goes_on_while_its_snapshot_is_written_and_acks_after(tmp_path):
    store = SlowStore(tmp_path, "async-ckpt", "k")
    part, inst, events, task = bolt_participant(store)
    for i in range(3):
        part.receive(CH, (i,))
    # the only channel: aligned at once, snapshot taken. The store holds every write until
    # release: had the task thread written the blob itself, receive would block in write_blob
    part.receive(CH, barrier=1)
    assert not store.release.is_set()
    assert events == [("barrier", 1)]  # forwarded before the write finished; no ack yet
    for i in range(3, 6):  # the bolt keeps processing meanwhile
        part.receive(CH, (i,))
    assert len(inst.component.rows) == 6
    part.poll_acks()
    assert [e[0] for e in events] == ["barrier"]
    store.release.set()
    assert part.writer.flush(5)
    part.poll_acks()
    kind, report = events[-1]
    assert kind == "ack" and report["id"] == 1 and "error" not in report
    assert report["bytes"] > 0 and report["write_ms"] >= 0 and report["duration_ms"] > 0
    assert all(name.startswith("checkpoint-writer") for name in store.writer_threads)
    # the blob holds the rows before the barrier, not those processed during the write
    assert FileStore(tmp_path, "async-ckpt", "k").read(1, task) == {"rows": [[0], [1], [2]]}


def test_a_failed_background_write_is_reported_in_the_ack_and_the_task_goes_on(tmp_path):
    part, inst, events, _ = bolt_participant(BrokenStore(tmp_path, "async-ckpt", "k"))
    part.receive(CH, (1,))
    part.receive(CH, barrier=1)
    part.close()  # waits for the write and sends its ack
    kind, report = events[-1]
    assert kind == "ack" and "disk full" in report["error"]
    part.receive(CH, (2,))
    assert inst.component.rows == [(1,), (2,)]


def test_acks_come_in_checkpoint_order(tmp_path):
    part, _, events, _ = bolt_participant(FileStore(tmp_path, "async-ckpt", "k"))
    for cid in (1, 2, 3):
        part.receive(CH, (cid,))
        part.receive(CH, barrier=cid)
    part.close()
    assert [r["id"] for kind, r in events if kind == "ack"] == [1, 2, 3]
    assert [cid for kind, cid in events if kind == "barrier"] == [1, 2, 3]


def test_a_spout_replays_from_the_start_only_after_a_restart_without_checkpoint(tmp_path):
    t = Topology("restore-start")
    t.add_spout(
        "s",
        "tests.topology.checkpoint.ckpt_components:OffsetSpout",
        outputs=["n"],
        config={"rows": []},
    )
    t.add_bolt("c", "tests.topology.checkpoint.ckpt_components:SeenBolt", inputs={"s": "shuffle"})
    task = t.task_ids()["s"][0]
    inst = Instance(t, "s", 0, task)
    inst.open()
    calls = []
    inst.component.replay_from_start = lambda: calls.append("start")
    part = Participant(
        inst,
        t,
        {},
        lambda cid: None,
        lambda report: None,
        store=FileStore(tmp_path, "restore-start", "k"),
    )
    part.restore(None)  # the topology's first start: the sources as they come
    assert calls == []
    part.restore(None, restarted=True)  # a failure before the first checkpoint completed
    assert calls == ["start"]
