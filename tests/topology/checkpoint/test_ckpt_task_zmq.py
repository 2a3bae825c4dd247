"""Barriers over the real ZeroMQ task links, without Spark: a test plays the driver (restore
point, checkpoint trigger) and checks the acks and the stored snapshots."""

import threading
import time

import pytest
import zmq

from tests.topology.checkpoint.ckpt_components import OffsetSpout, SeenBolt
from tests.topology.test_task_zmq import OPTIONS
from cep.protocol.frames import pack_message, unpack_message
from topology.checkpoint.store import FileStore
from topology.model import Topology
from topology.task import TaskRunner

LEFT = [(i, "L") for i in range(3000)]
RIGHT = [(i, "R") for i in range(3000)]


@pytest.fixture
def fake_driver():
    ctx = zmq.Context()
    pub, pull = ctx.socket(zmq.PUB), ctx.socket(zmq.PULL)
    endpoints = {
        "tasks": f"tcp://127.0.0.1:{pub.bind_to_random_port('tcp://127.0.0.1')}",
        "reports": f"tcp://127.0.0.1:{pull.bind_to_random_port('tcp://127.0.0.1')}",
    }
    yield endpoints, pub, pull
    ctx.destroy(linger=0)


def start(topology, driver, options):
    runners = [TaskRunner(topology, task, driver, options) for task in range(len(topology.tasks()))]
    endpoints = [r.bind("127.0.0.1") for r in runners]
    threads = []
    for runner in runners:
        runner.attempt = 3
        runner.connect(endpoints)
        thread = threading.Thread(target=lambda r=runner: (r.run(), r.close()), daemon=True)
        thread.start()
        threads.append(thread)
    return runners, threads


def play(pub, pull, message, seconds, acks, until=None):
    """Publish ``message`` every 20 ms for ``seconds`` (or until ``until(acks)``)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end and not (until and until(acks)):
        pub.send(pack_message(message))
        while pull.poll(20):
            report = unpack_message(pull.recv())
            if report["type"] == "checkpoint":
                acks.setdefault(report["id"], {})[report["task"]] = report


def test_barriers_align_over_real_sockets_and_snapshots_are_consistent(fake_driver, tmp_path):
    driver, pub, pull = fake_driver
    t = Topology("zmq-ckpt")
    for name, rows in (("left", LEFT), ("right", RIGHT)):
        t.add_spout(
            name,
            OffsetSpout,
            outputs=["n", "side"],
            config={"rows": rows, "batch_size": 20, "rate": 2000},
        )
    t.add_bolt("seen", SeenBolt, inputs={"left": "shuffle", "right": "shuffle"})
    options = dict(
        OPTIONS, checkpoint={"interval": 1.0, "dir": str(tmp_path), "name": t.name, "key": "k"}
    )
    runners, threads = start(t, driver, options)
    acks, base = {}, {"state": "active", "seq": 1, "restore": [3, None], "completed": None}
    play(pub, pull, dict(base, checkpoint=None), 0.4, acks)
    for cid in (1, 2):  # the next one only once every instance acked (a loaded machine)
        play(
            pub,
            pull,
            dict(base, checkpoint=cid),
            30,
            acks,
            until=lambda got, cid=cid: len(got.get(cid, ())) == 3,
        )
        play(pub, pull, dict(base, checkpoint=None), 0.2, acks)
    play(pub, pull, dict(base, checkpoint=None, completed=2), 0.3, acks)
    play(pub, pull, dict(base, state="stop"), 0.3, acks)
    for thread in threads:
        thread.join(5)
    assert sorted(acks) == [1, 2] and all(len(a) == 3 for a in acks.values())
    assert not any(a.get("error") for per in acks.values() for a in per.values())
    store, ids = FileStore(tmp_path, t.name, "k"), t.task_ids()
    for cid in (1, 2):
        left, right, seen = (store.read(cid, ids[c][0]) for c in ("left", "right", "seen"))
        assert 0 < left["pos"] <= len(LEFT) and 0 < right["pos"] <= len(RIGHT)
        assert sorted(map(tuple, seen["rows"])) == sorted(
            LEFT[: left["pos"]] + RIGHT[: right["pos"]]
        )
    spouts = [r.instance.component for r in runners if r.instance.kind == "spout"]
    assert all(s.committed and s.committed[-1][0] == 2 for s in spouts)
