"""The driver watches its tasks' processes (recovery from a killed task <= 30 s).

Spark fails a barrier stage as soon as one task's Python worker dies, but the other tasks of
the attempt run on until Spark kills their Python workers (``spark.python.task.killTimeout``
later), and only then are their slots free for the next attempt. Every task reports its pid
and host with its metrics; the driver checks the pids of the tasks on its own machine every
``interval`` seconds. A dead one is the failure seen at once: the status leaves ACTIVE with
the reason, and the driver publishes ``abort: <attempt>`` so the attempt's other tasks close
(a spout unregisters its socket) and end without waiting to be killed.

Tasks on other machines: with ``silent_s`` (topology.task_silence_s) a task of the running
attempt not heard from for that long (every task sends a heartbeat from its own thread every
metrics interval, so a busy or blocked task thread still counts as heard) is a failure too:
its machine died without closing its connections, or is cut off. Spark only notices that
after ``spark.worker.timeout`` (60 s by default); with spare executors
(topology.spare_workers) the stage then runs again on the others at once. Should the silent
task come back, its stage attempt is stale and its output fenced (publishers/fencing.py).
"""

import socket
import time

import psutil

HOST = socket.gethostname()


def executor_id(pid=None):
    """The Spark executor this process runs under: the `--executor-id` of the nearest
    ancestor that is an executor JVM (a Python worker's parent is pyspark's daemon, whose
    parent is the executor), or None (not under an executor, e.g. a local run)."""
    try:
        proc = psutil.Process(pid)
        for _ in range(6):
            proc = proc.parent()
            if proc is None:
                return None
            args = proc.cmdline()
            if "--executor-id" in args:
                return args[args.index("--executor-id") + 1]
    except (psutil.Error, IndexError):
        return None
    return None


def alive(pid):
    """False for a process that is gone or a zombie."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


class TaskWatch:
    """``check(attempt, reports)`` returns a new failure of that attempt once, else None;
    ``failure`` is the last one seen: {attempt, task, pid, time}."""

    def __init__(self, interval=0.25, host=HOST, silent_s=0.0):
        self.interval, self.host, self.silent_s = interval, host, silent_s
        self.next = 0.0
        self.failure = None
        self.heard = {}  # task -> time.monotonic() of its last report or heartbeat

    def hear(self, task):
        """A report or heartbeat of `task` of the current attempt came in."""
        self.heard[task] = time.monotonic()

    def new_attempt(self):
        self.heard = {}

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
        silent = self._silent(attempt, reports, now)
        if silent is not None:
            return silent
        for task, report in sorted(reports.items()):
            pid = report.get("pid")
            if (
                report.get("attempt") != attempt
                or report.get("host") != self.host
                or not pid
                or report.get("type") == "stopped"
            ):
                continue
            if not alive(pid):
                self.failure = {
                    "attempt": attempt,
                    "task": task,
                    "pid": pid,
                    "component": report.get("component"),
                    "time": time.time(),
                }
                return self.failure
        return None

    def _silent(self, attempt, reports, now):
        """A task of `attempt` that reported ready and then went silent for silent_s."""
        if self.silent_s <= 0:
            return None
        for task, report in sorted(reports.items()):
            last = self.heard.get(task)
            if (
                report.get("attempt") != attempt
                or last is None
                or report.get("type") not in ("ready", "metrics")
                or now - last < self.silent_s
            ):
                continue
            self.failure = {
                "attempt": attempt,
                "task": task,
                "pid": report.get("pid"),
                "component": report.get("component"),
                "time": time.time(),
                "silent_s": round(now - last, 1),
                "address": report.get("address") or report.get("host"),
                "executors": sorted(
                    {
                        r.get("executor")
                        for r in reports.values()
                        if r.get("executor") is not None
                        and r.get("address") == report.get("address")
                        and r.get("attempt") == attempt
                    }
                ),
            }
            return self.failure
        return None

    def reason(self, attempt):
        f = self.failed(attempt)
        if f is None:
            return None
        if "silent_s" in f:
            return (
                f"task {f['task']} ({f.get('component') or '?'} on {f['address']}) not "
                f"heard from for {f['silent_s']} s (its machine died or is cut off); "
                f"restarting the stage (attempt {attempt})"
            )
        return (
            f"task {f['task']} ({f.get('component') or '?'}, pid {f['pid']}) died; "
            f"restarting the stage (attempt {attempt})"
        )
