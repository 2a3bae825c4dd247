"""A task ends at once when the driver aborts its stage attempt (issue 11: another task of
the attempt died, topology/task_watch.py): real ZeroMQ task links, a test plays the driver.
An abort of another attempt is ignored; reports carry the host the driver checks pids on."""

import time

from cep.protocol.frames import pack_message
from tests.topology.test_task_zmq import drive, fake_driver, start  # noqa: F401 - fixture
from topology.model import Topology
from topology.task import superseded
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


def test_a_task_of_an_older_attempt_stops_when_the_driver_names_a_newer_one(fake_driver):  # noqa: F811
    """A stale task (its machine was cut off while Spark ran the stage again elsewhere) hears
    the driver's current attempt when the link returns and stops; its component is told
    (publisher bolts drop their queue). The attempt it belongs to, or an older one, and a
    driver that has not seen any attempt yet (-1) change nothing."""
    driver, pub, pull = fake_driver
    runners, threads = start(topology(), driver)  # attempt 7
    drive(pub, pull, "active", 0.5)
    for current in (7, 6, -1):
        for _ in range(5):
            pub.send(pack_message({"state": "active", "seq": 1, "attempt": current}))
            time.sleep(0.05)
    assert all(t.is_alive() for t in threads) and not any(r.superseded for r in runners)
    told = []
    runners[1].instance.component.superseded = lambda: told.append(1)
    started = time.monotonic()
    while any(t.is_alive() for t in threads) and time.monotonic() - started < 60:
        pub.send(pack_message({"state": "active", "seq": 1, "attempt": 9}))
        time.sleep(0.05)
    assert not any(t.is_alive() for t in threads)
    assert all(r.superseded == 9 for r in runners) and told == [1]
    assert not any(r.aborted for r in runners)  # stale, not aborted: its own attempt is over


def test_the_stale_rule():
    assert superseded(7, 9) and not superseded(7, 7) and not superseded(7, 6)
    assert not superseded(-1, 9)  # endpoints not exchanged yet: no attempt to compare
    assert not superseded(7, None) and not superseded(7, -1)  # an older driver, none seen yet
