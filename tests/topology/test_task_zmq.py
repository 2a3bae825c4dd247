"""The task loop over real ZeroMQ sockets, without Spark: a test plays the driver."""

import threading
import time

import pytest
import zmq

from cep.protocol.frames import pack_message, unpack_message
from topology.model import Topology
from topology.task import TaskRunner

OPTIONS = {
    "host": "127.0.0.1",
    "queue_batches": 8,
    "socket_buffer": 65536,
    "metrics_interval_s": 0.1,
    "idle_sleep_ms": 1.0,
}


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


def start(topology, driver):
    """Bind, 'allGather', connect and run every task in a thread (like the barrier stage)."""
    runners = [TaskRunner(topology, task, driver, OPTIONS) for task in range(len(topology.tasks()))]
    endpoints = [r.bind("127.0.0.1") for r in runners]
    threads = []
    for runner in runners:
        runner.attempt = 7
        runner.connect(endpoints)
        thread = threading.Thread(target=lambda r=runner: (r.run(), r.close()), daemon=True)
        thread.start()
        threads.append(thread)
    return runners, threads


def drive(pub, pull, state, seconds, until=None):
    """Publish the desired state every 100 ms (as the driver does) for `seconds`, and on until
    `until(reports)` holds (a loaded machine may be slow to run the tasks; at most 120 s);
    keep the latest report of each task."""
    reports, seq = {}, 0
    end, deadline = time.monotonic() + seconds, time.monotonic() + 120
    while time.monotonic() < end or (
        until is not None and time.monotonic() < deadline and not until(reports)
    ):
        pub.send(pack_message({"state": state, "seq": seq // 10}))
        seq += 1
        while pull.poll(10):
            r = unpack_message(pull.recv())
            if r["type"] != "heartbeat":  # the driver only notes when it heard a task
                reports[(r["component"], r["index"])] = r
    return reports


def test_tasks_wire_up_run_and_stop_on_command(fake_driver):
    driver, pub, pull = fake_driver
    t = Topology("zmq")
    t.add_spout(
        "s",
        "topology.testing:ListSpout",
        outputs=["w"],
        config={"rows": [[f"w{i % 7}"] for i in range(700)], "batch_size": 50},
    )
    t.add_bolt("c", "topology.testing:CountBolt", inputs={"s": ["w"]}, parallelism=2)
    runners, threads = start(t, driver)
    reports = drive(
        pub,
        pull,
        "active",
        1.5,
        until=lambda r: (
            ("s", 0) in r
            and ("c", 0) in r
            and ("c", 1) in r
            and r[("s", 0)]["emitted"] == 700
            and r[("c", 0)]["executed"] + r[("c", 1)]["executed"] == 700
        ),
    )
    assert reports[("s", 0)]["emitted"] == 700 and reports[("s", 0)]["attempt"] == 7
    assert reports[("c", 0)]["executed"] + reports[("c", 1)]["executed"] == 700
    counts = [r.instance.component.counts for r in runners[:2]]
    assert (
        not set(counts[0]) & set(counts[1]) and sum(map(sum, (c.values() for c in counts))) == 700
    )
    drive(pub, pull, "stop", 0.3)
    for thread in threads:
        thread.join(5)
    assert not any(thread.is_alive() for thread in threads)


def test_full_links_block_the_spout(fake_driver):
    driver, pub, pull = fake_driver
    t = Topology("bp")
    t.add_spout("s", "topology.testing:CounterSpout", outputs=["n"], config={"batch_size": 100})
    t.add_bolt(
        "slow", "topology.testing:SlowBolt", inputs={"s": "shuffle"}, config={"sleep_ms": 20}
    )
    runners, threads = start(t, driver)
    gaps = []
    for _ in range(2):
        reports = drive(
            pub, pull, "active", 1.5, until=lambda r: ("s", 0) in r and ("slow", 0) in r
        )
        spout, bolt = reports[("s", 0)], reports[("slow", 0)]
        gaps.append(spout["emitted"] - bolt["executed"])
    # bounded: 8 + 8 queued batches plus the kernel buffers (bytes), and not growing
    assert bolt["executed"] > 0 and 0 < gaps[1] < 100_000, gaps
    assert gaps[1] <= gaps[0] * 1.2 + 2_000, gaps
    assert spout["backpressure_ms"] > 1000
    drive(pub, pull, "stop", 0.3)
    for thread in threads:
        thread.join(5)
    assert not any(thread.is_alive() for thread in threads)
