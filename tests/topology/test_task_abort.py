"""A task ends at once when the driver aborts its stage attempt (issue 11: another task of
the attempt died, topology/task_watch.py): real ZeroMQ task links, a test plays the driver.
An abort of another attempt is ignored; reports carry the host the driver checks pids on."""
import time

from cep.protocol.frames import pack_message
from tests.topology.test_task_zmq import drive, fake_driver, start  # noqa: F401 - fixture
from topology.model import Topology
from topology.task_watch import HOST


def topology():
    t = Topology("abort")
    t.add_spout("s", "topology.testing:CounterSpout", outputs=["n"], config={"batch_size": 10})
    t.add_bolt("c", "topology.testing:CountBolt", inputs={"s": "shuffle"})
    return t


def test_an_abort_of_the_attempt_ends_every_task_and_marks_it_aborted(fake_driver):  # noqa: F811
    driver, pub, pull = fake_driver
    runners, threads = start(topology(), driver)  # attempt 7
    reports = drive(pub, pull, "active", 0.8)
    assert reports[("s", 0)]["host"] == HOST and reports[("c", 0)]["executed"] > 0
    for _ in range(5):  # an abort of an older attempt changes nothing
        pub.send(pack_message({"state": "active", "seq": 1, "abort": 6}))
        time.sleep(0.05)
    assert all(t.is_alive() for t in threads) and not any(r.aborted for r in runners)
    started = time.monotonic()
    while any(t.is_alive() for t in threads) and time.monotonic() - started < 60:
        pub.send(pack_message({"state": "active", "seq": 1, "abort": 7}))
        time.sleep(0.05)
    assert not any(t.is_alive() for t in threads)
    assert all(r.aborted for r in runners)
    print(f"every task ended {time.monotonic() - started:.2f} s after the abort")
