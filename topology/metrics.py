"""Per-instance metrics with Storm UI names, and their aggregation per component.

Counters are in events (rows): emitted, transferred (counted once per receiving task),
executed, failed. ``capacity`` is the busy fraction of the last interval (Storm: above 1.0
the bolt cannot keep up), ``execute_latency_ms`` the mean time of one execute() call (one
batch) over the last interval, ``backpressure_ms`` the total time spent waiting for full
downstream queues, ``input_queue_depth`` the events sent to an instance but not
yet executed (computed by the driver from every upstream's per-task transfer counts).
"""

import os
import time


class InstanceMetrics:
    """Counters of one running instance; ``snapshot()`` closes an interval."""

    def __init__(self, component_id, index, task_id):
        self.component_id, self.index, self.task_id = component_id, index, task_id
        self.emitted = self.transferred = self.executed = self.failed = 0
        self.received = self.acked = self.batches = 0
        self.sent_to = {}
        self.busy = 0.0
        self.calls = 0
        self.backpressure_s = 0.0
        self.last_error = None
        self.interval_start = time.monotonic()
        self.started = time.time()

    def record_execute(self, rows, seconds):
        self.executed += rows
        self.busy += seconds
        self.calls += 1

    def record_send(self, task, rows):
        self.transferred += rows
        self.sent_to[task] = self.sent_to.get(task, 0) + rows

    def record_error(self, rows, exc, where):
        self.failed += rows
        self.last_error = {
            "time": time.time(),
            "where": where,
            "error": f"{type(exc).__name__}: {exc}",
        }

    def snapshot(self):
        """A plain dict for the driver; resets the interval figures."""
        now = time.monotonic()
        span = max(now - self.interval_start, 1e-6)
        data = {
            "component": self.component_id,
            "index": self.index,
            "task": self.task_id,
            "emitted": self.emitted,
            "transferred": self.transferred,
            "executed": self.executed,
            "failed": self.failed,
            "received": self.received,
            "acked": self.acked,
            "capacity": round(self.busy / span, 4),
            "execute_latency_ms": round(1000 * self.busy / self.calls, 4) if self.calls else 0.0,
            "backpressure_ms": round(1000 * self.backpressure_s, 1),
            "sent_to": {str(k): v for k, v in self.sent_to.items()},
            "last_error": self.last_error,
            "pid": os.getpid(),
            "uptime_s": round(time.time() - self.started, 1),
        }
        self.busy, self.calls, self.interval_start = 0.0, 0, now
        return data


def add_queue_depths(instances):
    """Set input_queue_depth on each instance dict from all upstream ``sent_to`` counts."""
    sent = {}
    for inst in instances:
        for task, rows in inst.get("sent_to", {}).items():
            sent[int(task)] = sent.get(int(task), 0) + rows
    for inst in instances:
        inst["input_queue_depth"] = max(0, sent.get(inst["task"], 0) - inst["received"])
    return instances


SUMMED = ("emitted", "transferred", "executed", "failed", "acked", "input_queue_depth")


def by_component(instances):
    """{component: {"instances": [...], totals..., "capacity": max}} from instance dicts."""
    out = {}
    for inst in sorted(instances, key=lambda i: (i["component"], i["index"])):
        comp = out.setdefault(
            inst["component"],
            {"instances": [], **{k: 0 for k in SUMMED}, "capacity": 0.0, "execute_latency_ms": 0.0},
        )
        comp["instances"].append(inst)
        for key in SUMMED:
            comp[key] += inst.get(key, 0)
        comp["capacity"] = max(comp["capacity"], inst["capacity"])
        comp["execute_latency_ms"] = max(comp["execute_latency_ms"], inst["execute_latency_ms"])
    return out
