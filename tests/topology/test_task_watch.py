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
    reports = {0: report(child.pid, host="elsewhere"), 1: report(child.pid, attempt=2),
               2: report(child.pid, kind="stopped")}
    assert watch.check(3, reports) is None and watch.failure is None
