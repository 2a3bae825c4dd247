"""The driver watches its tasks' processes (recovery from a killed task <= 30 s).

Spark fails a barrier stage as soon as one task's Python worker dies, but the other tasks of
the attempt run on until Spark kills their Python workers (``spark.python.task.killTimeout``
later), and only then are their slots free for the next attempt. Every task reports its pid
and host with its metrics; the driver checks the pids of the tasks on its own machine every
``interval`` seconds. A dead one is the failure seen at once: the status leaves ACTIVE with
the reason, and the driver publishes ``abort: <attempt>`` so the attempt's other tasks close
(a spout unregisters its socket) and end without waiting to be killed. Tasks on other
machines are left to Spark's own detection.
"""
import socket
import time

import psutil

HOST = socket.gethostname()


def alive(pid):
    """False for a process that is gone or a zombie."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


class TaskWatch:
    """``check(attempt, reports)`` returns a new failure of that attempt once, else None;
    ``failure`` is the last one seen: {attempt, task, pid, time}."""

    def __init__(self, interval=0.25, host=HOST):
        self.interval, self.host = interval, host
        self.next = 0.0
        self.failure = None

    def failed(self, attempt):
        """The failure seen in stage attempt ``attempt``, or None."""
        if self.failure is not None and self.failure["attempt"] == attempt:
            return self.failure
        return None

    def check(self, attempt, reports):
        now = time.monotonic()
        if now < self.next or attempt < 0 or self.failed(attempt):
            return None
        self.next = now + self.interval
        for task, report in sorted(reports.items()):
            pid = report.get("pid")
            if (report.get("attempt") != attempt or report.get("host") != self.host
                    or not pid or report.get("type") == "stopped"):
                continue
            if not alive(pid):
                self.failure = {"attempt": attempt, "task": task, "pid": pid,
                                "component": report.get("component"), "time": time.time()}
                return self.failure
        return None

    def reason(self, attempt):
        f = self.failed(attempt)
        if f is None:
            return None
        return (f"task {f['task']} ({f.get('component') or '?'}, pid {f['pid']}) died; "
                f"restarting the stage (attempt {attempt})")
