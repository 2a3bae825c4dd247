"""The driver's watch on its tasks' processes (issue 11): a dead task process of the current
stage attempt is seen at once, once; other hosts, other attempts and stopped tasks are not
judged. Real processes (a child that is killed)."""

import os
import signal
import subprocess
import sys

from topology.task_watch import HOST, TaskWatch, alive


def report(pid, attempt=3, host=HOST, kind="metrics"):
    return {"pid": pid, "attempt": attempt, "host": host, "type": kind, "component": "cep"}


def test_a_killed_task_process_is_seen_once_with_its_reason():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        watch = TaskWatch(interval=0)
        reports = {0: report(os.getpid()), 1: report(child.pid)}
        assert watch.check(3, reports) is None and alive(child.pid)
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        failure = watch.check(3, reports)
        assert failure["task"] == 1 and failure["pid"] == child.pid
        assert watch.check(3, reports) is None  # seen once
        assert watch.failed(3) and not watch.failed(4)
        assert "task 1 (cep, pid" in watch.reason(3) and "attempt 3" in watch.reason(3)
    finally:
        child.kill()


def test_other_hosts_attempts_and_stopped_tasks_are_not_judged():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()  # a pid that is gone
    watch = TaskWatch(interval=0)
    reports = {
        0: report(child.pid, host="elsewhere"),
        1: report(child.pid, attempt=2),
        2: report(child.pid, kind="stopped"),
    }
    assert watch.check(3, reports) is None and watch.failure is None


def test_a_task_not_heard_from_for_silent_s_fails_its_attempt(monkeypatch):
    """Tasks on another machine: no pid to check, but one whose reports and heartbeats stop
    (its machine died without closing connections, or is cut off) fails the attempt after
    silent_s; tasks still starting (restoring) and older attempts' reports do not count."""
    import topology.task_watch as tw

    clock = [100.0]
    monkeypatch.setattr(tw.time, "monotonic", lambda: clock[0])
    watch = tw.TaskWatch(interval=0, host="driver-host", silent_s=5.0)
    reports = {
        0: {
            "attempt": 3,
            "type": "metrics",
            "host": "m1",
            "address": "10.0.0.11",
            "component": "f",
            "pid": 11,
            "executor": "4",
        },
        2: {"attempt": 3, "type": "restoring", "address": "10.0.0.11", "executor": "4"},
        1: {"attempt": 3, "type": "restoring", "host": "m2", "pid": 12},
    }
    watch.hear(0)
    watch.hear(1)
    clock[0] += 4.9
    assert watch.check(3, reports) is None
    watch.hear(0)  # a heartbeat: still there
    clock[0] += 4.9
    assert watch.check(3, reports) is None
    clock[0] += 0.2  # task 1 is silent too, but restoring (a long restore is not a death)
    failure = watch.check(3, reports)
    assert failure["task"] == 0 and failure["silent_s"] == 5.1
    assert failure["executors"] == ["4"]  # the executors on its machine, to be killed
    assert "not heard from for 5.1 s" in watch.reason(3) and "10.0.0.11" in watch.reason(3)
    off = tw.TaskWatch(interval=0, host="driver-host")  # silent_s 0: Spark's own detection
    off.hear(0)
    clock[0] += 100
    assert off.check(3, reports) is None
    watch.new_attempt()  # the next attempt's tasks start unheard
    assert watch.check(4, {0: dict(reports[0], attempt=4)}) is None
