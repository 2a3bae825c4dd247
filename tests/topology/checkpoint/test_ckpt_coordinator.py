"""The driver's checkpoint coordinator: trigger, complete on every ack, abandon, restore
point per stage attempt with checksum fallback, metrics."""

from topology.checkpoint.coordinator import Coordinator
from topology.checkpoint.store import FileStore


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def make(tmp_path, ntasks=2, **options):
    clock = Clock()
    store = FileStore(tmp_path, "P", "k", keep=3)
    opts = {"interval": 5.0, "timeout": 30.0, "key": "k", **options}
    return Coordinator(opts, ntasks, store=store, clock=clock), store, clock


def ack(coord, store, cid, task, attempt=0, state=None):
    store.write(cid, task, state if state is not None else {"task": task})
    return coord.on_ack(attempt, {"id": cid, "task": task, "bytes": 10, "alignment_ms": 2.0})


def test_a_checkpoint_completes_when_every_instance_acked(tmp_path):
    coord, store, clock = make(tmp_path)
    coord.new_attempt(0)
    assert coord.tick(running=True) is None  # not due yet
    clock.now = 5.0
    assert coord.tick(running=False) is None  # tasks not all running
    cid = coord.tick(running=True)
    assert cid == 1 and coord.control()["checkpoint"] == 1
    assert not ack(coord, store, 1, 0)
    assert not ack(coord, store, 1, 0, attempt=-5)  # an older attempt's ack is ignored
    assert ack(coord, store, 1, 1)
    assert store.completed() == [1] and coord.control() == {
        "checkpoint": None,
        "completed": 1,
        "restore": [0, None, False],
    }
    metrics = coord.metrics()
    assert metrics["last"]["id"] == 1 and metrics["last"]["bytes"] == 20
    assert metrics["completed"] == 1 and metrics["failed"] == 0


def test_an_overdue_checkpoint_is_abandoned_and_counted(tmp_path):
    coord, store, clock = make(tmp_path)
    coord.new_attempt(0)
    clock.now = 5.0
    assert coord.tick(running=True) == 1
    ack(coord, store, 1, 0)
    clock.now = 40.0
    assert coord.tick(running=True) is None
    assert coord.metrics()["failed"] == 1 and "abandoned" in coord.metrics()["errors"][-1]["error"]
    clock.now = 46.0
    assert coord.tick(running=True) == 2  # ids never repeat
    assert store.completed() == []


def test_a_new_attempt_abandons_the_inflight_one_and_pins_the_restore_point(tmp_path):
    coord, store, clock = make(tmp_path)
    coord.new_attempt(0)
    for cid in (1, 2):
        clock.now += 5.0
        assert coord.tick(running=True) == cid
        ack(coord, store, cid, 0)
        ack(coord, store, cid, 1)
    clock.now += 5.0
    assert coord.tick(running=True) == 3
    ack(coord, store, 3, 0)
    coord.new_attempt(7)
    # the second attempt this driver saw: a restart (spouts replay from the start when
    # there is no checkpoint)
    assert coord.control() == {"checkpoint": None, "completed": 2, "restore": [7, 2, True]}
    assert not ack(coord, store, 3, 1, attempt=7)  # 3 was abandoned


def test_a_corrupt_blob_falls_back_to_the_previous_checkpoint_and_is_reported(tmp_path):
    coord, store, clock = make(tmp_path)
    for cid in (1, 2):
        for task in (0, 1):
            store.write(cid, task, {"cid": cid})
        store.complete(cid, {})
    path = store.base / "000000000002" / "task-00001.ckpt"
    path.write_bytes(path.read_bytes()[:-3])
    coord = Coordinator({"interval": 5.0, "key": "k"}, 2, store=store, clock=clock)
    coord.new_attempt(0)
    assert coord.restore_id == 1
    metrics = coord.metrics()
    assert metrics["corrupt"] == 1 and "checkpoint 2 task 1" in metrics["errors"][-1]["error"]
    assert coord.tick(running=True) is None and coord.next_id == 3  # no id reused


def test_disabled_checkpoints_restore_nothing(tmp_path):
    coord = Coordinator({"interval": 0}, 2)
    coord.new_attempt(0)
    assert coord.tick(running=True) is None
    assert coord.control()["restore"] == [0, None, False] and coord.metrics() == {"enabled": False}


def test_a_changed_plan_starts_fresh_and_says_so(tmp_path):
    old = FileStore(tmp_path, "P", "oldkey")
    old.write(1, 0, {"x": 1})
    old.complete(1, {})
    coord = Coordinator(
        {"interval": 5.0, "key": "newkey"}, 1, store=FileStore(tmp_path, "P", "newkey")
    )
    coord.new_attempt(0)
    assert coord.restore_id is None
    assert "fresh state" in coord.metrics()["notice"]
    same = Coordinator({"interval": 5.0, "key": "oldkey"}, 1, store=old)
    same.new_attempt(0)
    assert same.restore_id == 1 and same.metrics()["notice"] == ""
